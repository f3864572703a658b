"""Sessions kept as memory: the ``session-log`` hook reads a Claude Code transcript and keeps the session as one
section of ROOT/<repository>/<date>.md (rewritten, never duplicated), secrets masked, the tree valid, and the log
found by the next prompt's recall through a real daemon."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

import pytest

from memsearch.harness import claude_code, session_log
from memsearch.harness.secrets import mask
from memsearch.memory.validator import validate
from tests.harness.test_claude_code import FILES, env_now, run_hook

#: Realistic credentials (the issuers' formats; none is live), each with the part that must never reach memory.
SECRETS = {
    "sk-ant-api03-Xq3vR8mK2pL9nB4wY7tZ1cF6hJ0dS5gA-e_Uo2iW4rE8yT3uI9oP1aS6dF0gH2jK4lZ7xC9vB-AbCdEfAA":
        "Xq3vR8mK2pL9nB4wY7tZ1cF6hJ0dS5gA",
    "sk-proj-T8fG2hJ9kL3mN6pQ1rS4tV7wX0yZ5aB": "T8fG2hJ9kL3mN6pQ1rS4tV7wX0yZ5aB",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a": "16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012345":
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "AKIAIOSFODNN7EXAMPLE": "IOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "wJalrXUtnFEMI/K7MDENG",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c": "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
    "password=correct-horse-battery": "correct-horse-battery",
    '"db_password": "Tr0ub4dor&3"': "Tr0ub4dor",
    "postgres://ada:s3cretPa55@db.internal:5432/app": "s3cretPa55",
    "Authorization: Bearer ya29.a0AfH6SMBx3kTq9Lr0vXyZ": "a0AfH6SMBx3kTq9Lr0vXyZ",
    "xoxb-263594206564-2343091423-GH7cfSJ9bR3kY2wKLnq6aCcK": "GH7cfSJ9bR3kY2wKLnq6aCcK",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM\n-----END RSA PRIVATE KEY-----":
        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM",
}
#: Text that looks a little like a secret and must stay as it is.
HARMLESS = ["the password field is required", "tokenizer=cl100k_base", "use sk-learn for this",
            "commit 4f2a9c1e0b7d", "set token: [REDACTED]", "AKIA is how AWS key ids start"]


def entry(kind: str, content, when: str, cwd: str, **extra) -> str:
    return json.dumps({"type": kind, "message": {"role": kind, "content": content}, "timestamp": when, "cwd": cwd,
                       "sessionId": extra.pop("sid", "s-1"), "gitBranch": "main", "isSidechain": False, **extra})


def transcript(path, cwd, turns, sid="s-1", day="2026-11-03") -> str:
    """A transcript as Claude Code writes it: prompts, tool calls, tool results, final answers, and noise."""
    lines = [json.dumps({"type": "queue-operation", "operation": "dequeue", "sessionId": sid})]
    for i, (prompt, answer, edited) in enumerate(turns):
        t = f"{day}T10:{i:02d}"
        lines.append(entry("user", prompt, f"{t}:00.000Z", cwd, sid=sid))
        lines.append(entry("assistant", [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Looking."},
                                         {"type": "tool_use", "id": f"r{i}", "name": "Read",
                                          "input": {"file_path": f"{cwd}/README.md"}}], f"{t}:01.000Z", cwd, sid=sid))
        lines.append(entry("user", [{"type": "tool_result", "tool_use_id": f"r{i}", "content": "x"}], f"{t}:02.000Z",
                           cwd, sid=sid))
        lines.append(entry("user", "<local-command-stdout>ok</local-command-stdout>", f"{t}:02.500Z", cwd, sid=sid))
        lines.append(entry("assistant", [{"type": "text", "text": "a subagent's words"}], f"{t}:02.700Z", cwd, sid=sid,
                           isSidechain=True))
        if edited:
            lines.append(entry("assistant", [{"type": "tool_use", "id": f"e{i}", "name": "Edit",
                                              "input": {"file_path": f"{cwd}/{edited}", "old_string": "a",
                                                        "new_string": "b"}}], f"{t}:03.000Z", cwd, sid=sid))
        if answer:
            lines.append(entry("assistant", [{"type": "text", "text": answer}], f"{t}:04.000Z", cwd, sid=sid))
    path.write_text("\n".join(lines) + "\n{not json\n")
    return str(path)


def test_masking_hides_realistic_credentials_and_keeps_ordinary_text():
    for secret, part in SECRETS.items():
        masked = mask(f"before {secret} after")
        assert part not in masked and "[masked]" in masked and masked.startswith("before"), (secret, masked)
    for text in HARMLESS:
        assert mask(text) == text


def test_a_session_is_one_section_rewritten_as_it_grows(make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")
    root = make_tree({"MEMORY.md": "# Memory\nRoot.\n"})
    repo = tmp_path / "code" / "atlas"
    (repo / ".git").mkdir(parents=True)
    cwd = str(repo / "src")  # a session started in a subfolder belongs to the repository
    log = tmp_path / "s-1.jsonl"
    first = [("Why does the nightly export fail? " + " ".join(SECRETS), "", "export.py")]
    payload = {"session_id": "s-1", "transcript_path": transcript(log, cwd, first), "cwd": cwd,
               "hook_event_name": "Stop", "last_assistant_message": "The export ran out of disk: now it streams."}
    assert session_log.record_hook(root, payload) == "atlas/2026-11-03.md"
    text = (root / "atlas" / "2026-11-03.md").read_text()
    assert text.startswith("# atlas: sessions of 2026-11-03\n") and text.count("<!-- memsearch:session s-1 -->") == 1
    assert "Why does the nightly export fail?" in text and "now it streams" in text
    assert "`export.py`" in text and "`README.md`" in text and "subagent" not in text and "local-command" not in text
    for part in SECRETS.values():
        assert part not in text
    assert "Claude Code sessions" in (root / "atlas" / "MEMORY.md").read_text()

    # Stop again after a second turn, then SessionEnd: the same section, rewritten
    second = first + [("Also add a retry to the upload", "Added a retry with backoff to upload.py.", "upload.py")]
    payload |= {"transcript_path": transcript(log, cwd, second), "last_assistant_message": ""}
    session_log.record_hook(root, payload)
    session_log.record_hook(root, payload | {"hook_event_name": "SessionEnd", "reason": "exit"})
    text = (root / "atlas" / "2026-11-03.md").read_text()
    assert text.count("<!-- memsearch:session s-1 -->") == 1 and text.count("## Session") == 1
    assert "Added a retry with backoff" in text and "`upload.py`" in text

    # another session the same day: a second section, the first kept
    other = tmp_path / "s-2.jsonl"
    session_log.record_hook(root, {"session_id": "s-2", "cwd": cwd, "hook_event_name": "PreCompact",
                                   "transcript_path": transcript(other, cwd, [("Rename the CLI", "Renamed.", "")],
                                                                 sid="s-2")})
    session_log.record_hook(root, payload)
    text = (root / "atlas" / "2026-11-03.md").read_text()
    assert text.count("## Session") == 2 and text.index("s-1 -->") < text.index("s-2 -->")
    assert "Rename the CLI" in text and "Added a retry with backoff" in text
    assert validate(root).valid


def test_a_long_session_is_cut_to_its_budget(make_tree, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")
    root = make_tree({"MEMORY.md": "# Memory\n"})
    turns = [(f"prompt number {i} " + "word " * 300, f"answer number {i} " + "done " * 300, f"f{i}.py")
             for i in range(60)]
    log = transcript(tmp_path / "t.jsonl", str(tmp_path / "proj"), turns)
    session_log.record_hook(root, {"session_id": "s-1", "transcript_path": log, "hook_event_name": "Stop"})
    (day,) = (root / "proj").glob("2026-*.md")
    section = day.read_text().split("\n", 2)[2]
    assert len(section.encode()) <= session_log.SECTION_BYTES
    assert "prompt number 0 " in section and "answer number 59 " in section and "turns left out here" in section
    assert "and 30 more" in section  # 60 changed files, 30 listed


def test_a_huge_session_costs_what_its_kept_turns_do(monkeypatch):
    """20,000 turns (a 30 MB transcript): only the turns that fit are rendered and masked. Before, every turn was
    masked and the section cut by joining what was left once per turn dropped: the hook ran past its 8 s bound
    and the session was never written."""
    masked = []
    monkeypatch.setattr(session_log, "mask", lambda text: masked.append(text) or text)
    turns = tuple(session_log.Turn(f"prompt {i} " + "x" * 400, f"answer {i} " + "y" * 900) for i in range(20_000))
    section = session_log.render_section(session_log.Session("s-huge", turns=turns))
    assert len(section.encode()) <= session_log.SECTION_BYTES
    assert "prompt 0 " in section and "answer 19999 " in section and "turns left out here" in section
    assert len(masked) < 20  # the first turn and the latest few that fit, each prompt and answer once


def test_a_hook_that_gives_up_says_why_in_the_hooks_log(make_tree, tmp_path):
    """A root that cannot be written, or a transcript that is not there: the hook prints nothing and exits 0 (never
    in the session's way), and hooks.log (owner-only, beside the service's log) says why. Before: nothing anywhere."""
    from memsearch.location import hooks_log_file

    log = transcript(tmp_path / "t.jsonl", str(tmp_path / "proj"), [("Where is the retry test?", "In tests/.", "")])
    (tmp_path / "afile").write_text("not a folder\n")
    bad_root = tmp_path / "afile" / "memory"
    for root, path in ((bad_root, log), (make_tree({"MEMORY.md": "# Memory\n"}), str(tmp_path / "gone.jsonl"))):
        payload = {"session_id": "s-1", "transcript_path": path, "hook_event_name": "SessionEnd"}
        done, _ = run_hook(claude_code.hook_command("SessionEnd", root), payload, tmp_path, MEMSEARCH_AUTOSTART="0")
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    lines = hooks_log_file().read_text().splitlines()
    assert len(lines) == 2 and all("Traceback" not in line for line in lines), lines
    assert f"session-log hook, {bad_root}: " in lines[0] and "gone.jsonl: this session is not recorded" in lines[1]
    assert hooks_log_file().stat().st_mode & 0o777 == 0o600


def test_an_odd_line_of_the_transcript_loses_only_itself(make_tree, tmp_path):
    """A user entry whose text block is not a string (a null, a number) is skipped like an unreadable line: the
    session's other turns are still recorded. Before: a TypeError, and the hook recorded nothing of the session."""
    root = make_tree({"MEMORY.md": "# Memory\n"})
    cwd = str(tmp_path / "proj")
    path = tmp_path / "t.jsonl"
    transcript(path, cwd, [("Where is the retry test?", "In tests/test_retry.py.", "")])
    odd = [entry("user", [{"type": "text", "text": text}], "2026-11-03T10:30:00.000Z", cwd) for text in (5, None, ["x"])]
    path.write_text(path.read_text() + "\n".join(odd) + "\n")
    payload = {"session_id": "s-1", "transcript_path": str(path), "cwd": cwd, "hook_event_name": "SessionEnd"}
    done, _ = run_hook(claude_code.hook_command("SessionEnd", root), payload, tmp_path, MEMSEARCH_AUTOSTART="0")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    log = (root / "proj" / "2026-11-03.md").read_text()
    assert "Where is the retry test?" in log and "In tests/test_retry.py." in log
    assert validate(root).valid


def test_nothing_is_written_for_a_session_without_a_prompt_or_a_transcript(make_tree, tmp_path):
    root = make_tree({"MEMORY.md": "# Memory\n"})
    empty = tmp_path / "t.jsonl"
    empty.write_text(json.dumps({"type": "summary", "summary": "x"}) + "\n")
    for payload in ({"transcript_path": str(empty)}, {"transcript_path": str(tmp_path / "gone.jsonl")}, {}):
        assert session_log.record_hook(root, payload) is None
    assert sorted(p.name for p in root.iterdir()) == ["MEMORY.md"]


@pytest.mark.slow
def test_the_next_prompt_recalls_the_logged_session(make_tree, tmp_path):
    """Installed with --log-sessions: the Stop hook, run as Claude Code runs it, writes the log; the next
    prompt's hook (through the daemon the hooks started) recalls it in another session, not in the session itself;
    the tree stays valid."""
    root = make_tree(FILES)
    project = tmp_path / "billing-service"
    (project / ".git").mkdir(parents=True)
    install = [sys.executable, "-m", "memsearch", "claude-code", "install", str(root), "--project", str(project),
               "--log-sessions", "--yes"]
    subprocess.run(install, capture_output=True, text=True, timeout=120, env=env_now(), stdin=subprocess.DEVNULL, check=True)
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = {event: settings["hooks"][event][-1]["hooks"][0]["command"] for event in settings["hooks"]}
    assert shlex.split(command["Stop"])[4] == "session-log" and command["Stop"] == command["SessionEnd"]
    log = transcript(tmp_path / "t.jsonl", str(project),
                     [("Why do refunds to Norwegian cards bounce?", "The acquirer rejects NOK refunds over 30 days "
                       "old; refunds.py now issues a credit note instead.", "refunds.py")])
    try:
        run_hook(command["SessionStart"], {"hook_event_name": "SessionStart", "source": "startup"}, project)
        done, _ = run_hook(command["Stop"], {"session_id": "s-1", "transcript_path": log, "cwd": str(project),
                                             "hook_event_name": "Stop", "stop_hook_active": False}, project)
        assert done.returncode == 0 and done.stdout == "", done
        assert (root / "billing-service" / "2026-11-03.md").is_file() and validate(root).valid
        deadline, recalled = time.monotonic() + 120, ""
        while time.monotonic() < deadline and "credit note" not in recalled:
            done, _ = run_hook(command["UserPromptSubmit"], {"hook_event_name": "UserPromptSubmit", "session_id": "s-2",
                                                             "prompt": "what did we do about NOK refunds"}, project)
            recalled = done.stdout
            time.sleep(0.5)
        context = json.loads(recalled)["hookSpecificOutput"]["additionalContext"]
        assert "billing-service/2026-11-03.md" in context and "credit note" in context
        # the running session's own logged turns are in its context already: its next prompt does not recall them
        # (before: they came back as the top hit of every prompt like the one before)
        done, _ = run_hook(command["UserPromptSubmit"], {"hook_event_name": "UserPromptSubmit", "session_id": "s-1",
                                                         "prompt": "what did we do about NOK refunds"}, project)
        assert done.returncode == 0 and "credit note" not in done.stdout and "Session s-1" not in done.stdout, done.stdout
        assert "Memory recalled for this prompt" in done.stdout  # the rest of memory still is
    finally:
        subprocess.run([sys.executable, "-m", "memsearch", "stop", str(root)], capture_output=True, env=env_now(),
                       timeout=60)
    assert claude_code.LOG_EVENTS.keys() <= settings["hooks"].keys()


def test_sessions_logged_at_once_keep_every_section(make_tree, tmp_path, monkeypatch):
    """Hooks of several sessions (and Stop racing SessionEnd) write one day's log at once: every section stays."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("MEMSEARCH_AUTOSTART", "0")
    root = make_tree({"MEMORY.md": "# Memory\n"})
    cwd = str(tmp_path / "atlas")
    payloads = [{"session_id": f"s-{i}", "hook_event_name": "Stop", "cwd": cwd,
                 "transcript_path": transcript(tmp_path / f"{i}.jsonl", cwd, [(f"task number {i}", f"done {i}", "")],
                                               sid=f"s-{i}")} for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        assert set(pool.map(lambda p: session_log.record_hook(root, p), payloads * 2)) == {"atlas/2026-11-03.md"}
    text = (root / "atlas" / "2026-11-03.md").read_text()
    assert text.count("## Session") == 6 and all(f"task number {i}" in text for i in range(6))
    assert validate(root).valid


def test_a_note_of_the_user_with_the_days_name_is_never_written_into(make_tree, tmp_path):
    """A repository named like a folder of the user's (``notes``), on a day the user has a note of that date: the
    session goes to ``notes/2026-12-07-sessions.md`` (the log's, by its marker), the note stays as it was, and the
    folder's MEMORY.md says once that the logs are there too. Before: the session was appended to the note."""
    note = "# 7 December\nPersonal note: demo moved to Friday.\n"
    index = "# Notes\nDated notes of mine.\n"
    root = make_tree({"MEMORY.md": "# Memory\n", "notes/MEMORY.md": index, "notes/2026-12-07.md": note})
    repo = tmp_path / "repos" / "notes"
    (repo / ".git").mkdir(parents=True)
    cwd = str(repo)
    payload = {"session_id": "s-1", "cwd": cwd, "hook_event_name": "Stop",
               "transcript_path": transcript(tmp_path / "1.jsonl", cwd, [("Fix the flaky test", "", "")], day="2026-12-07")}
    assert session_log.record_hook(root, payload) == "notes/2026-12-07-sessions.md"
    payload["transcript_path"] = transcript(tmp_path / "1.jsonl", cwd, [("Fix the flaky test", "Fixed.", ""),
                                                                        ("Now the docs", "Done.", "")], day="2026-12-07")
    session_log.record_hook(root, payload)  # the next turn: the same section, in the same file
    other = {"session_id": "s-2", "cwd": cwd, "hook_event_name": "SessionEnd",
             "transcript_path": transcript(tmp_path / "2.jsonl", cwd, [("Rename the CLI", "Renamed.", "")], sid="s-2",
                                           day="2026-12-07")}
    assert session_log.record_hook(root, other) == "notes/2026-12-07-sessions.md"
    assert (root / "notes" / "2026-12-07.md").read_text() == note
    log = (root / "notes" / "2026-12-07-sessions.md").read_text()
    assert log.count("## Session") == 2 and "Now the docs" in log and "Rename the CLI" in log
    assert session_log.is_session_log(log) and not session_log.is_session_log(note)
    described = (root / "notes" / "MEMORY.md").read_text()
    assert described.startswith(index) and described.count("Claude Code sessions in the notes repository") == 1
    assert "YYYY-MM-DD-sessions.md" in described
    # another day with no note of the user's: the plain name, the log's own from then on
    day = transcript(tmp_path / "3.jsonl", cwd, [("Ship it", "Shipped.", "")], sid="s-3", day="2026-12-08")
    assert session_log.record_hook(root, other | {"session_id": "s-3", "transcript_path": day}) == "notes/2026-12-08.md"
    assert (root / "notes" / "MEMORY.md").read_text() == described and validate(root).valid


def test_a_day_whose_two_names_are_notes_of_the_user_is_not_recorded_and_says_why(make_tree, tmp_path):
    notes = {"work/2026-11-03.md": "# Mine\n", "work/2026-11-03-sessions.md": "# Also mine\n"}
    root = make_tree({"MEMORY.md": "# Memory\n", "work/MEMORY.md": "# Work\n", **notes})
    log = transcript(tmp_path / "t.jsonl", str(tmp_path / "work"), [("Where is the retry test?", "In tests/.", "")])
    payload = {"session_id": "s-1", "transcript_path": log, "hook_event_name": "SessionEnd"}
    done, _ = run_hook(claude_code.hook_command("SessionEnd", root), payload, tmp_path, MEMSEARCH_AUTOSTART="0")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert all((root / rel).read_text() == text for rel, text in notes.items())
    from memsearch.location import hooks_log_file

    (line,) = hooks_log_file().read_text().splitlines()
    assert "'work/2026-11-03.md' and 'work/2026-11-03-sessions.md' are notes that are not session logs" in line


def test_a_repository_named_like_a_directory_of_another_format_gets_a_folder_of_its_own(make_tree, tmp_path,
                                                                                       monkeypatch):
    """``skills`` is Agent Skills' folder (the ``foreign`` setting), never memory: a repository of that name is kept
    in ``skills-sessions``. Before: every write was refused and the session never recorded."""
    skill = "---\nname: deploy\n---\nDeploy the app.\n"
    root = make_tree({"MEMORY.md": "# Memory\n", "skills/deploy/SKILL.md": skill})
    for name, folder in (("skills", "skills-sessions"), ("Skills", "Skills-sessions"), ("ledger", "ledger-sessions")):
        monkeypatch.setenv("MEMSEARCH_FOREIGN", "skills,ledger" if name == "ledger" else "skills")
        repo = tmp_path / name
        (repo / ".git").mkdir(parents=True)
        log = transcript(tmp_path / f"{name}.jsonl", str(repo), [(f"Tidy {name}", "Tidied.", "")], sid=name)
        payload = {"session_id": name, "transcript_path": log, "cwd": str(repo), "hook_event_name": "Stop"}
        assert session_log.record_hook(root, payload) == f"{folder}/2026-11-03.md"
        assert f"Tidy {name}" in (root / folder / "2026-11-03.md").read_text()
        assert "Claude Code sessions" in (root / folder / "MEMORY.md").read_text()
    assert (root / "skills" / "deploy" / "SKILL.md").read_text() == skill and sorted(p.name for p in
                                                                                    (root / "skills").iterdir()) == ["deploy"]
    monkeypatch.setenv("MEMSEARCH_FOREIGN", "skills")
    assert validate(root).valid


def test_repositories_named_in_any_script_keep_their_names_and_folders_of_their_own(make_tree, tmp_path):
    """A repository named in Cyrillic, Japanese or with an accent (decomposed, as macOS writes it) is logged in a
    folder of its name. Before: every letter outside A-Z was a dash, so ``Проект`` and ``日本語`` both became
    ``sessions`` (two repositories in one folder, whose MEMORY.md named only the first) and ``café`` ``caf``."""
    root = make_tree({"MEMORY.md": "# Memory\n"})
    for name, folder in (("Проект", "Проект"), ("日本語", "日本語"), ("cafe\u0301 app", "caf\u00e9-app")):
        repo = tmp_path / name
        (repo / ".git").mkdir(parents=True)
        log = transcript(tmp_path / f"{len(folder)}-{folder}.jsonl", str(repo), [(f"Tidy {name}", "Tidied.", "")],
                         sid=folder)
        payload = {"session_id": folder, "transcript_path": log, "cwd": str(repo), "hook_event_name": "Stop"}
        assert session_log.record_hook(root, payload) == f"{folder}/2026-11-03.md"
        assert f"Tidy {name}" in (root / folder / "2026-11-03.md").read_text()
        assert str(repo) in (root / folder / "MEMORY.md").read_text()
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == sorted(["Проект", "日本語", "caf\u00e9-app"])
    assert validate(root).valid


def test_a_folder_outside_git_is_not_said_to_be_on_branch_head(tmp_path):
    """Claude Code writes ``"gitBranch": "HEAD"`` in a folder that is not a git repository (and on a detached head):
    no branch. Before: every such session's heading said ``on branch HEAD``."""
    cwd = str(tmp_path / "scratch")
    path = tmp_path / "t.jsonl"
    for branches, shown in ((["HEAD", "HEAD"], ""), (["main", "HEAD"], " on branch main")):
        path.write_text("\n".join(entry(kind, text, f"2026-11-03T10:0{i}:00.000Z", cwd, gitBranch=branch)
                                  for i, (kind, text, branch) in enumerate(zip(("user", "assistant"),
                                                                                ("Tidy up", [{"type": "text",
                                                                                              "text": "Done."}]),
                                                                                branches))) + "\n")
        session = session_log.read_transcript(path, "s-1")
        heading = session_log.render_section(session).splitlines()[0]
        assert "HEAD" not in heading and heading.endswith(shown) and (" on branch" in heading) == bool(shown), heading


def test_an_emoji_cut_in_two_in_the_transcript_does_not_lose_the_session(make_tree, tmp_path):
    """A transcript line may hold half of a surrogate pair (``\\ud83d``: an emoji cut in two, as JavaScript's
    JSON.stringify writes it). Before: writing the log raised UnicodeEncodeError and the session was never recorded,
    at every Stop; now the half is U+FFFD and the rest is kept."""
    root = make_tree({"MEMORY.md": "# Memory\n"})
    cwd = str(tmp_path / "shop")
    path = tmp_path / "t.jsonl"
    path.write_text(entry("user", "Fix the checkout banner \ud83d please", "2026-11-03T10:00:00.000Z", cwd) + "\n"
                    + entry("assistant", [{"type": "text", "text": "Fixed \udc00 it."}], "2026-11-03T10:00:05.000Z",
                            cwd) + "\n")
    assert "\\ud83d" in path.read_text()  # the escape, as Claude Code writes it
    payload = {"session_id": "s-1", "transcript_path": str(path), "cwd": cwd, "hook_event_name": "SessionEnd"}
    assert session_log.record_hook(root, payload) == "shop/2026-11-03.md"
    text = (root / "shop" / "2026-11-03.md").read_text(encoding="utf-8")
    assert "Fix the checkout banner \ufffd please" in text and "Fixed \ufffd it." in text
    assert validate(root).valid


def test_pasted_terminal_output_is_kept_readable_not_as_control_characters(make_tree, tmp_path):
    """A prompt holding pasted terminal output (colour escapes, a NUL, a BEL) or U+202E. Before: written as they were,
    so the day's log was a binary file to grep, recoloured the terminal that printed it, and showed text reversed."""
    import unicodedata

    root = make_tree({"MEMORY.md": "# Memory\n"})
    cwd = str(tmp_path / "shop")
    pasted = "Why this? \x1b[1;31merror\x1b[0m: bad byte \x00 then \x07 and \u202eesrever C:\\src\\app"
    log = transcript(tmp_path / "t.jsonl", cwd, [(pasted, "Because \x1b[32mnull\x1b[0m.", "")])
    payload = {"session_id": "s-1", "transcript_path": log, "cwd": cwd, "hook_event_name": "SessionEnd"}
    assert session_log.record_hook(root, payload) == "shop/2026-11-03.md"
    text = (root / "shop" / "2026-11-03.md").read_text(encoding="utf-8")
    assert not [c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")], ascii(text)
    assert "Why this? error: bad byte \\x00 then \\x07 and \\u202eesrever C:\\src\\app" in text
    assert "**Claude:** Because null." in text and validate(root).valid
