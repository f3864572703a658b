"""What a query says about itself: the dates it names, an identifier it looks up, whether it asks about the asker.

Both are read from the query text alone, with no model and no network, and steer fusion
(:mod:`memsearch.engine.search.fusion`): an identifier ("atlas-00042", ``retry_budget``,
``ClickHouse``, "ERR503") is matched by its exact spelling, which BM25 sees and a small
embedding model blurs; a date ("on 9 November, 2022", "in March 2024", "2026-02-10", "in
June") points at memory written then, which dated memory records in its front matter or file
name (:func:`memsearch.memory.document.date_of`). Relative dates ("yesterday", "last week")
are not resolved: "now" for the agent is not "now" for the memory; but a question for the newest
state ("the latest X", "last time", "so far": :func:`wants_latest`) is recognised, and so is one that lists
several things ("in which order did these happen: A, B, C?": :func:`listed_items`). A question about
the asker's own doings, words or tastes ("what do I prefer", "what did I ask you to") is told from
one about what the other side said ("what did you suggest": :func:`asks_own_words`), which matters
in a chat transcript where the two speak in turns (:mod:`.speakers`); and one whose answer is spread over
memory (a summary, an order of events, everything about X, standing instructions: :func:`spans_memory`) gets
the best passages of many sessions first (:func:`.timeline.spread`); a request for advice or work ("which
seeds should I order": :func:`asks_advice`) leans in a chat to what the user asked for or prefers
(:func:`.speakers.standing`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "DateRange",
    "query_dates",
    "wants_latest",
    "asks_advice",
    "asks_own_words",
    "asks_instructions",
    "spans_memory",
    "asks_for_folder",
    "is_identifier",
    "has_identifier",
    "listed_items",
    "clean_text",
]

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MON = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: A bare month only counts after a preposition and in full ("in June", "during May"), so
#: "may" the verb and "mar" the word are never read as months.
_FULL = "|".join(name.lower() for name in calendar.month_name if name)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MON})\.?,?\s+(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MON})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MON})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_MONTH = re.compile(rf"\b(?:in|during|since|by|until|of|early|late|mid)\s+({_FULL})\b", re.I)
_YEAR = re.compile(r"\b(?:in|during|since|of)\s+((?:19|20)\d{2})\b", re.I)

_TOKEN = re.compile(r"[\w.\-:#@]+")
_PLAIN_NUMBER = re.compile(r"\d+(?:st|nd|rd|th|s|am|pm|k|m|km|kg|h|min)?", re.I)
_ABBREVIATION = re.compile(r"[A-Za-z]\.(?:[A-Za-z]\.)*[A-Za-z]?")  # e.g., U.S.
#: A product's spelling, not code: one lower-case letter, then a capitalised or an upper-case word (iPhone, eBay, iOS).
_BRAND = re.compile(r"[a-z](?:[A-Z][a-z]+|[A-Z]{2,})")


@dataclass(frozen=True)
class DateRange:
    """Inclusive ISO dates; ``month`` alone (``first``/``last`` None): that month of any year."""

    first: str | None = None
    last: str | None = None
    month: int | None = None

    def contains(self, date: str | None, slack_days: int = 0) -> bool:
        """Whether ``date`` (ISO) falls in the range or up to ``slack_days`` after it."""
        if not date:
            return False
        try:
            day = dt.date.fromisoformat(date)
        except ValueError:
            return False
        if self.month is not None:
            return day.month == self.month or (day - dt.timedelta(days=slack_days)).month == self.month
        late = (dt.date.fromisoformat(self.last) + dt.timedelta(days=slack_days)).isoformat()
        return self.first <= date <= late


def _day(year: str, month: int, day: str) -> DateRange | None:
    try:
        iso = dt.date(int(year), month, int(day)).isoformat()
    except ValueError:
        return None
    return DateRange(iso, iso)


def query_dates(query: str) -> tuple[DateRange, ...]:
    """The absolute dates ``query`` names, most precise form first (days, then months, then years)."""
    found = [_day(m[1], int(m[2]), m[3]) for m in _ISO.finditer(query)]
    found += [_day(m[3], _MONTHS[m[2].lower()], m[1]) for m in _DAY_MONTH_YEAR.finditer(query)]
    found += [_day(m[3], _MONTHS[m[1].lower()], m[2]) for m in _MONTH_DAY_YEAR.finditer(query)]
    ranges = [r for r in found if r]
    if not ranges:
        for m in _MONTH_YEAR.finditer(query):
            year, month = int(m[2]), _MONTHS[m[1].lower()]
            last = calendar.monthrange(year, month)[1]
            ranges.append(DateRange(dt.date(year, month, 1).isoformat(), dt.date(year, month, last).isoformat()))
    if not ranges:
        ranges = [DateRange(month=_MONTHS[m[1].lower()]) for m in _MONTH.finditer(query)]
    if not ranges:
        ranges = [DateRange(f"{m[1]}-01-01", f"{m[1]}-12-31") for m in _YEAR.finditer(query)]
    return tuple(dict.fromkeys(ranges))


_LATEST = re.compile(r"\b(?:latest|newest|most\s+recent(?:ly)?|last(?:\s+time)?|so\s+far|current(?:ly)?|now|"
                     r"up\s+to\s+date|these\s+days|nowadays|at\s+(?:the\s+moment|present)|presently|"
                     r"as\s+things\s+stand)\b", re.I)
_TIME = ("week|weekend|month|year|night|evening|morning|summer|winter|spring|fall|autumn|quarter|term|semester|"
         "monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|"
         "august|september|october|november|december|christmas|easter")
_LAST_TIME = re.compile(rf"\blast\s+(?:{_TIME})s?\b", re.I)


def wants_latest(query: str) -> bool:
    """Whether ``query`` asks for the newest state of something ("latest", "most recent", "last time")."""
    return bool(_LATEST.search(_LAST_TIME.sub(" ", query)))


#: The asker as the subject: "I", "we", "my", "our", "me", "us".
_FIRST_PERSON = re.compile(r"\b(?:I(?:'ve|'d|'m|'ll)?|[Ww]e(?:'ve|'d|'re|'ll)?|[Mm]y|[Oo]urs?|[Mm]e|[Uu]s)\b(?!\.)")
#: ... unless the question asks what the assistant said: "did you suggest", "you told me", "your advice".
_ASSISTANT_SAID = re.compile(
    r"\b(?:(?:did|have|had|would)\s+you|you(?:'ve)?\s+(?:said|say|suggest\w*|recommend\w*|told|tell|advis\w*|"
    r"mention\w*|propos\w*|explain\w*|think|thought|gave|give\s+me)|your\s+(?:advice|suggestion|"
    r"recommendation|answer|tip|idea|plan)s?)\b",
    re.I,
)


_ASKS_INSTRUCTIONS = re.compile(
    r"\b(?:asked\s+you\s+to|ask\s+you\s+to|told\s+you\s+to|always|never|instruct\w*|rules?\s+for\s+you)\b",
    re.IGNORECASE)


def asks_instructions(query: str) -> bool:
    """Whether ``query`` asks for standing instructions ("what did I ask you to always do", "what did I ask you to
    keep in mind"); "what should I keep in mind when ..." asks for advice, and is not one."""
    return bool(_ASKS_INSTRUCTIONS.search(query))


#: A question whose answer is spread over memory rather than held by one passage: a summary or overview
#: (summarise, recap, overview, rundown, history of, the story of, walk me through, catch me up, progress,
#: milestones, "how did X go"), a span (so far, up to now, over time, over the past weeks, across our
#: chats/sessions/notes, everything about X, every time) or an order of events (in which order, in order,
#: chronological, sequence, which came first, earliest, before or after), or the asker's preferences, many
#: of them. English's words for "many events", "their order" and "many tastes" (benchmarks/research/LOG.md,
#: rounds four and fourteen), not one benchmark's template: the story / "how did X go" / "everything about" /
#: "in order" forms were added from codeagent's tuning half, "preferences" from longchat-hard's.
_SPANS = re.compile(
    r"\b(?:summar(?:y|i[sz]e\w*)|recap|overview|run-?down|round-?up|timeline|history\s+of|story\s+of|"
    r"walk\s+me\s+through|catch\s+me\s+up|progress|milestones?|so\s+far|up\s+to\s+now|over\s+time|"
    r"how\s+did\s+[^?.!]{1,80}?\s+go(?!\s+about)|"
    r"over\s+the\s+(?:(?:past|last)\s+)?(?:few\s+)?(?:days|weeks|months|years)|"
    r"(?:across|throughout)\s+(?:(?:our|the|all|my|these|those)\s+)*(?:chats|sessions|conversations|notes|talks|meetings)|"
    r"from\s+(?:first\s+to\s+last|start\s+to\s+finish|beginning\s+to\s+end)|"
    r"every\s?thing\s+(?:(?:that\s+)?(?:happened|i|we)|about|on)|every\s+time|all\s+the\s+times|"
    r"(?:in\s+)?(?:which|what)\s+order|order\s+in\s+which|in\s+(?:the\s+)?order(?!\s+to\b)|chronolog\w*|sequence|"
    r"(?:came|happened|was)\s+first|earliest|before\s+or\s+after|after\s+or\s+before|preferences)\b",
)  # matched against the lower-cased query: without re.IGNORECASE it runs 3.5x faster (4 against 15 us a query)


def spans_memory(query: str) -> bool:
    """Whether ``query`` asks for what is spread over memory: a summary, an order of events, everything about
    a topic, the asker's preferences (:data:`_SPANS`), or the standing instructions given over time
    (:func:`asks_instructions`)."""
    return bool(_SPANS.search(query.lower())) or asks_instructions(query)


#: A request for advice or for work ("what should I plant", "can you recommend", "suggest a menu", "write me a
#: plan", "how do I treat it", "what's the best way to", "any tips for", "I'm trying to"), not a question about
#: what was said ("what did you suggest"). English's request forms, matched on the lower-cased query; a coding
#: agent's imperatives ("fix", "add", "refactor") are left out: a session log's every prompt is one, and the lean
#: was measured on chats only.
_WORK = (r"write|rewrite|draft|suggest|recommend|give\s+me|plan|correct|check|review|make|create|put\s+together|"
         r"help\s+me|explain|show\s+me|outline|translate|find\s+me|tell\s+me\s+how")
_ADVICE = re.compile(
    r"\b(?:should|shall)\s+(?:i|we)\b|\bhow\s+(?:do|can|could)\s+(?:i|we)\b|"
    r"\b(?:can|could|would|will)\s+you\s+(?:please\s+)?(?:" + _WORK + r"|help|look|improve|put|give|show|"
    r"tell\s+me\s+(?:how|what|which))\b|"
    r"(?:^|[.!?]\s+)(?:please\s+)?(?:" + _WORK + r")\b|"
    r"\bwhat(?:'s|\s+is|\s+are|\s+would\s+be)\s+(?:the\s+|a\s+)?(?:best|right|good)\s+(?:way|approach|option|choice|"
    r"idea|plan)s?\b|\bany\s+(?:tips|advice|suggestions?|ideas|recommendations?)\b|"
    r"\bwhat\s+do\s+you\s+(?:suggest|recommend)\b|\bi\s+need\s+(?:help|advice|ideas|tips)\b|"
    r"\bi(?:'m|\s+am)\s+(?:trying|looking|planning|hoping)\s+to\b")
_RECALL = re.compile(r"\b(?:did|had)\s+you\b|\byou(?:'ve)?\s+(?:said|told|suggested|recommended|advised|mentioned)\b")


def asks_advice(query: str) -> bool:
    """Whether ``query`` asks for advice or work now ("what should I", "can you recommend", "suggest a menu"),
    not what was said before ("what did you suggest") nor an account of memory ("give me a recap": it spans
    memory, :func:`spans_memory`)."""
    q = query.lower()
    return bool(_ADVICE.search(q)) and not _RECALL.search(q) and not spans_memory(query)


def asks_own_words(query: str) -> bool:
    """Whether ``query`` asks about the asker's own doings, words or tastes ("what do I prefer", "what did
    I tell you", "my plans") rather than what the assistant said ("what did you suggest")."""
    return bool(_FIRST_PERSON.search(query)) and not _ASSISTANT_SAID.search(query)


#: A question that asks which folder holds something ("which folder has the harbor outages", "in what
#: directory ..."), or where the asker keeps, wrote down or would find something ("where did I record the
#: crashes", "where are the session logs kept"): the folder's ``MEMORY.md`` is its answer. A verb of keeping
#: records, or a noun of them ("where are the day by day notes of my work"), is needed: "where are we sleeping on the
#: trip" and "where do the backups go" ask for a fact.
_FOLDER_QUESTION = re.compile(
    r"\b(?:which|what)\s+(?:sub)?(?:folder|directory|dir)\b"
    r"|\bwhere\s+(?:(?:did|do|would|should|can|could|will)\s+(?:i|we)\s+"
    r"(?:keep|store|write|jot|record|note|file|log|document|find|look|read|save)\b"
    r"|(?:is|are|was|were)\b[^?.!]{0,80}?\b(?:kept|stored|recorded|written|noted|filed|logged|documented|saved)\b"
    r"|(?:is|are|was|were)\s+(?:the|my|our|all)\b[^?.!]{0,60}?\b"
    r"(?:notes|logs|records|journals?|diar(?:y|ies)|entries|write-?ups)\b)",
    re.I)


def asks_for_folder(query: str) -> bool:
    """Whether ``query`` asks which folder (directory) holds something, in those words, or where something is
    kept in memory ("where did I write down ...", "where are ... recorded", "where are the notes of ...")."""
    return bool(_FOLDER_QUESTION.search(query))


@lru_cache(maxsize=16384)
def is_identifier(token: str) -> bool:
    """A code-like token: letters with digits (``atlas-00042``, ``v2``), snake_case,
    camelCase (``ClickHouse``), or dotted names (``config.yaml``); plain numbers, ordinals,
    times, abbreviations and brand spellings (``iPhone``) are not."""
    token = token.strip(".-:#@")
    if len(token) < 2 or _PLAIN_NUMBER.fullmatch(token) or _BRAND.fullmatch(token):
        return False
    if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
        return True
    if re.search(r"[^\W_]_[^\W_]", token) or re.search(r"[a-z][A-Z]", token):
        return True
    return bool(re.search(r"[A-Za-z][.:#][A-Za-z]", token)) and not _ABBREVIATION.fullmatch(token)


def has_identifier(query: str) -> bool:
    """Whether any token of ``query`` is an identifier (:func:`is_identifier`)."""
    return any(is_identifier(token) for token in _TOKEN.findall(query))


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: bytes a shell passed undecoded (surrogate escapes) decoded as
    UTF-8, lone surrogates and undecodable bytes as U+FFFD; tokenizers refuse anything else."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


#: A list's separators: commas (not one before a year: "9 November, 2022"), semicolons, "then".
_LIST_SPLIT = re.compile(r",(?!\s*\d{4})\s*(?:and\s+|or\s+|then\s+)?|;\s*|\s+(?:and\s+)?then\s+")
#: ... and the last item's "and" / "or".
_LIST_LAST = re.compile(r"\s+(?:and|or)\s+")
_AFTER_COLON = re.compile(r":\s*(.+)$")
_WORD = re.compile(r"[^\W\d_]{2,}")


def listed_items(query: str, colon_only: bool = False) -> list[str] | None:
    """The things ``query`` lists, or None: after a colon two or more, otherwise three or more, split on
    commas, semicolons, "then" and a last "and" / "or"; each holds a word. ``colon_only``: a list after a colon only."""
    after = _AFTER_COLON.search(query)
    if not after and colon_only:
        return None
    body = (after.group(1) if after else query).rstrip("?.! ")
    parts = [p for p in _LIST_SPLIT.split(body) if p.strip()]
    if len(parts) >= 2:
        parts = parts[:-1] + _LIST_LAST.split(parts[-1])
    parts = [p for p in parts if _WORD.search(p)]
    return parts if (after and len(parts) >= 2) or len(parts) >= 3 else None
