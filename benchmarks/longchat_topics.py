"""The topics of the long-chat corpus (benchmarks/longchat.py): what a user does, asks, instructs and prefers.

Each :class:`Topic` holds the user's turns that questions are about (``events`` in the order they
happen, an ``instruction``, a ``preference``, a value stated and later ``update``\\d), two assistant
``facts`` (a paragraph buried in a long answer, with the question that asks for it), the user's
ordinary questions (``asks``) and the topic's words (``words``) that fill the generic assistant
paragraphs (:data:`GENERIC`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Topic", "TOPICS", "GENERIC"]


@dataclass(frozen=True)
class Topic:
    name: str
    label: str  # how a question names the topic: "my vegetable garden"
    events: tuple[tuple[str, str], ...]  # (user turn, short label for order questions), in time order
    instruction: tuple[str, str]  # (user turn, question)
    preference: tuple[str, str]
    update: tuple[str, str, str]  # (first statement, later statement, question): the later one answers
    facts: tuple[tuple[str, str], ...]  # (assistant paragraph, question)
    asks: tuple[str, ...]
    words: tuple[str, ...]


TOPICS: tuple[Topic, ...] = (
    Topic(
        "garden", "my vegetable garden",
        events=(("I finally built the two raised beds out of larch boards this weekend, my back is killing me.", "building the raised beds"),
                ("Update: the soil test came back and the pH is 7.8, way more alkaline than I expected.", "getting the soil tested"),
                ("I planted out the tomato seedlings yesterday, twelve plants along the south fence.", "planting out the tomatoes"),
                ("Bad news, blight got into the tomatoes and I had to pull half of them.", "losing tomatoes to blight")),
        instruction=("When we talk about the garden, only suggest organic treatments please, nothing synthetic.",
                     "What instructions did I give you about treating problems in the garden?"),
        preference=("I'd always pick heirloom varieties over F1 hybrids, even if the yield is lower.",
                    "What kind of seed varieties do I prefer?"),
        update=("The plot gets roughly six hours of direct sun a day.",
                "The neighbours cut down their walnut tree, so the plot gets about nine hours of sun now.",
                "How many hours of sun does my garden plot get?"),
        facts=(("For the alkaline soil, work in elemental sulphur at about 50 g per square metre in autumn; it takes "
                "months for the bacteria to convert it, so don't expect the pH to move before spring.",
                "How much sulphur did you suggest for lowering the soil pH?"),
               ("Water the tomatoes deeply twice a week at the base rather than a little every day, and keep the leaves "
                "dry; wet foliage in the evening is exactly what blight spores need.",
                "How often did you tell me to water the tomatoes?")),
        asks=("Should I mulch the beds now or wait until it's warmer?", "What can I plant next to the beans?",
              "Is it worth building a cold frame this year?", "How do I keep slugs off the lettuce?"),
        words=("raised beds", "compost", "mulch", "seedlings", "the tomatoes", "crop rotation", "watering", "the soil"),
    ),
    Topic(
        "marathon", "my marathon training",
        events=(("Signed up for the Berlin marathon today, no going back now.", "signing up for Berlin"),
                ("Did my first 25 km long run this morning, legs were heavy after 20.", "the first 25 km long run"),
                ("The physio says it's mild shin splints, so I'm on two weeks of cycling instead of running.", "the shin splints diagnosis"),
                ("Ran the half-marathon tune-up race in 1:52, felt strong the whole way.", "the half-marathon tune-up race")),
        instruction=("Whenever you give me a training plan, put the paces in minutes per kilometre, not per mile.",
                     "What instructions did I give you about training plans?"),
        preference=("I much prefer running early in the morning before work; evening runs wreck my sleep.",
                    "When do I prefer to run?"),
        update=("My goal for the marathon is to finish under four and a half hours.",
                "After the half I've changed my marathon goal to 4:10.",
                "What is my current marathon goal time?"),
        facts=(("For the long runs, practise fuelling every 40 minutes with a gel and some water, so your stomach is used "
                "to it on race day; never try a new gel brand in the race itself.",
                "How often did you say I should take a gel on long runs?"),
               ("Taper over the final three weeks: cut weekly volume to about 80%, then 60%, then 40%, while keeping a "
                "few short efforts at marathon pace so your legs stay sharp.",
                "How did you suggest I taper before the marathon?")),
        asks=("How many runs a week should I be doing at this stage?", "Is strength training worth it for runners?",
              "What should I eat the night before a long run?", "Are carbon-plated shoes worth the money?"),
        words=("the long run", "easy pace", "recovery", "mileage", "intervals", "the taper", "race day", "cadence"),
    ),
    Topic(
        "renovation", "the kitchen renovation",
        events=(("We got three quotes for the kitchen and went with the carpenter from Pankow.", "choosing the carpenter"),
                ("The old tiles are off and we found water damage behind the sink.", "finding the water damage"),
                ("The plumber moved the sink to the window wall today.", "moving the sink"),
                ("The worktops are in! We went with oiled oak in the end.", "installing the worktops")),
        instruction=("Please always give me costs in euros including VAT when we talk about the renovation.",
                     "What instructions did I give you about costs for the renovation?"),
        preference=("I prefer open shelving to wall cabinets, I like seeing the plates.",
                    "What do I prefer for kitchen storage?"),
        update=("The renovation budget is 18,000 euros all in.",
                "We had to raise the kitchen budget to 22,500 euros because of the water damage.",
                "What is the current budget for the kitchen?"),
        facts=(("Oiled oak needs re-oiling roughly every three months in a busy kitchen: sand lightly with 240 grit where "
                "it looks dry and wipe on a thin coat of hardwax oil, then buff after twenty minutes.",
                "How often did you say the oak worktops need oiling?"),
               ("Before closing the wall, let the damp area dry for at least two weeks with a dehumidifier and check it "
                "with a moisture meter; below about 15% on the wood is safe to board over.",
                "What moisture reading did you say is safe before closing the wall?")),
        asks=("Do we need a permit to move the sink?", "What's a sensible order for the trades?",
              "Are induction hobs worth it over gas?", "How do we protect the floor during the work?"),
        words=("the worktops", "the cabinets", "the plumbing", "the tiles", "the extractor", "lighting", "the floor", "the budget"),
    ),
    Topic(
        "spanish", "learning Spanish",
        events=(("Started the Spanish course at the Volkshochschule tonight, A2 level.", "starting the evening course"),
                ("Had my first conversation exchange with Lucía, we talked for an hour.", "the first exchange with Lucía"),
                ("Passed the A2 exam with 84 points!", "passing the A2 exam"),
                ("Booked two weeks of immersion classes in Granada for October.", "booking the Granada classes")),
        instruction=("When you correct my Spanish, explain the grammar rule briefly instead of just giving the right form.",
                     "What instructions did I give you about correcting my Spanish?"),
        preference=("I prefer learning with podcasts over apps; the gamified stuff doesn't stick for me.",
                    "How do I prefer to learn Spanish?"),
        update=("I can manage about twenty minutes of practice a day.",
                "With the new job I only get about ten minutes of Spanish a day now.",
                "How much time a day do I have for Spanish practice?"),
        facts=(("For the subjunctive, start with the trigger phrases you already use, like 'espero que' and 'quiero que': "
                "learn them as chunks with one example each before you worry about the full conjugation tables.",
                "What did you suggest for learning the subjunctive?"),
               ("Use spaced repetition for vocabulary: ten new cards a day is plenty, and reviewing them on the tram "
                "twice a day beats one long session at the weekend.",
                "How many new vocabulary cards a day did you recommend?")),
        asks=("Is it better to learn Latin American or Castilian Spanish?", "How do I get over freezing when I speak?",
              "Which podcasts are good at my level?", "How do I remember ser versus estar?"),
        words=("vocabulary", "the past tenses", "listening practice", "speaking", "the exam", "grammar", "pronunciation", "reading"),
    ),
    Topic(
        "jobsearch", "my job search",
        events=(("Quit my job at the agency today, two months' notice.", "handing in my notice"),
                ("Had the first interview with Helix Robotics, a systems design round.", "the Helix Robotics interview"),
                ("Got an offer from Kestrel Analytics, 78k plus equity.", "getting the Kestrel offer"),
                ("Signed with Kestrel, I start on the first of the month.", "signing with Kestrel")),
        instruction=("Don't rewrite my cover letters completely, just point out the weak sentences.",
                     "What instructions did I give you about my cover letters?"),
        preference=("I prefer smaller companies where I can talk to the founders directly.",
                    "What kind of employer do I prefer?"),
        update=("I'm asking for 72k as my minimum salary.",
                "Given the market I've raised my salary floor to 80k.",
                "What is my minimum salary now?"),
        facts=(("In the systems design round, start by asking about scale and constraints, sketch the simplest design "
                "that works, and only then add caches, queues and sharding where the numbers demand it.",
                "What approach did you suggest for the systems design interview?"),
               ("When you negotiate, name a number only after they do, and anchor the equity conversation on the "
                "vesting schedule and the strike price rather than the headline share count.",
                "What did you advise about negotiating equity?")),
        asks=("How long should my CV be?", "Should I mention the gap year?", "How do I answer the weakness question?",
              "Is it fine to ask about remote work in the first interview?"),
        words=("the CV", "interviews", "the offer", "references", "networking", "the portfolio", "salary", "recruiters"),
    ),
    Topic(
        "wedding", "planning the wedding",
        events=(("We set the date: 12 September, at the lake.", "setting the date"),
                ("Booked the venue, the old boathouse, deposit paid.", "booking the boathouse"),
                ("Sent out the save-the-dates to 90 people.", "sending the save-the-dates"),
                ("Had the tasting with the caterer, we picked the fish menu.", "the caterer tasting")),
        instruction=("Keep every wedding suggestion vegetarian-friendly, half our friends don't eat meat.",
                     "What instructions did I give you about wedding suggestions?"),
        preference=("We'd rather have a small band than a DJ.",
                    "What do we prefer for music at the wedding?"),
        update=("We're planning for about 90 guests.",
                "The guest list grew, we're at 120 guests now.",
                "How many guests are we planning for?"),
        facts=(("For a lakeside September evening, plan a rain option and heaters from around 19:00; sunset is about "
                "19:40 then, so book the photographer's golden-hour slot for 19:00 to 19:30.",
                "When did you say the golden-hour photos should be?"),
               ("Budget roughly 1.5 drinks per guest per hour for the reception and have one bartender for every 50 "
                "guests, so queues at the bar stay short.",
                "How many bartenders did you recommend per guest?")),
        asks=("What do we do about plus-ones?", "How early should we book the photographer?",
              "Is a weekday wedding cheaper?", "How do we handle the seating plan?"),
        words=("the venue", "the guest list", "the caterer", "the budget", "the invitations", "the band", "the timeline", "the flowers"),
    ),
)

#: Assistant paragraphs for any topic; {label} names the topic, {a} and {b} are two of its words.
GENERIC: tuple[str, ...] = (
    "That's a good question, and it comes up a lot with {label}. The short answer is that it depends on how much time "
    "you can realistically put into {a} each week, and whether {b} is the thing that is holding you back right now.",
    "If I were in your position I would start small with {a}. Trying to fix everything at once usually means nothing "
    "gets done properly, and you end up frustrated with {label} as a whole rather than with one specific part.",
    "One thing people often underestimate is how much {b} affects everything else. It is worth spending an evening "
    "getting that right, because the rest of {label} gets noticeably easier once it is settled.",
    "A practical way to approach it: write down the three things about {a} that bother you most, pick the one that "
    "is cheapest to change, and give it two weeks before you judge whether it worked.",
    "There is no single right answer here. Some people swear by a strict routine for {a}, others do better with a "
    "looser plan and a weekly check-in; what matters is that you can keep it up when life gets busy.",
    "It might also help to keep a short log. Nothing elaborate: a line or two after each session about {a} and {b} "
    "is enough to spot patterns after a month, and it makes our conversations about {label} much more concrete.",
    "I would be careful with advice you find on forums about {b}. A lot of it is written for very different "
    "situations, and what works for someone with more time or a bigger budget may not transfer to yours.",
    "If you want, next time we can go through {a} step by step. Bring whatever notes you have and we can turn them "
    "into a simple plan with a few checkpoints, so you can see progress instead of guessing.",
    "Don't be discouraged by setbacks with {b}; they are completely normal at this stage. Most of the progress with "
    "{label} comes from boring consistency rather than from any clever trick.",
    "To sum up: focus on {a} first, keep an eye on {b}, and give yourself some credit for what you have already done. "
    "You are further along with {label} than you think.",
    "Another angle worth considering is timing. Working on {a} at a moment when you have energy makes a bigger difference "
    "than most people expect, and it keeps {b} from turning into a chore.",
    "Finally, it's fine to ask for help. A friend who has been through {label} can often spot in ten minutes what "
    "would take weeks to figure out alone, especially around {b}.",
)
