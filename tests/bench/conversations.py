"""A synthetic multi-session conversational dev set, with evidence labels, for `make bench`'s dev section.

Two people talk over several sessions spread across months; every turn is one `episode` memory whose
content starts with its speaker ("Caroline: ...") and whose metadata holds its session's date, the
protocol of the held-out conversational benchmark. Questions come in four kinds, each with the turns
that hold its answer (the evidence):

- single-hop: one turn answers ("What did Melanie name her dog?").
- temporal: when something happened, or what happened in a named month or before an event.
- multi-hop: two turns, joined through a person the question does not name ("What does Melanie's
  sister study?": one turn names the sister, another says what she studies).
- open-domain: an inference from several turns about someone's tastes ("Would Caroline enjoy a
  camping trip?").

Both speakers have the same kinds of facts (a pet, a job, a relative, a hobby), so the other speaker's
turns are the nearest distractors, along with small talk. Seeds: `DEV_SEED` is the split settings are
chosen on; `HELD_OUT_SEED` is run once per final configuration, as a check that the dev split was not
over-fitted (its phrasings come from the same templates, so it is no substitute for the real benchmark).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta

DEV_SEED = 19
HELD_OUT_SEED = 1919
KINDS = ("single-hop", "temporal", "multi-hop", "open-domain")

NAMES = (
    "Caroline", "Melanie", "Joanna", "Nate", "Audrey", "Andrew", "Gina", "Jon", "Tim", "John",
    "Maria", "Deborah", "Jolene", "Evan", "Sam", "Calvin", "Dave", "Priya", "Lucas", "Hannah",
)  # fmt: skip
PETS = (
    ("dog", "puppy", ["Oliver", "Bailey", "Max", "Luna", "Pepper"]),
    ("cat", "kitten", ["Mochi", "Whiskers", "Cleo", "Simba", "Nala"]),
    ("rabbit", "bunny", ["Clover", "Thumper", "Hazel", "Biscuit"]),
)
JOBS = (
    ("nurse", "St. Mary's Hospital"), ("graphic designer", "a small branding studio"),
    ("software engineer", "a fintech startup"), ("teacher", "Lincoln Elementary"),
    ("accountant", "a firm downtown"), ("chef", "an Italian restaurant on Main Street"),
    ("physical therapist", "a sports clinic"), ("librarian", "the city library"),
)  # fmt: skip
RELATIVES = (("sister", "she", "her"), ("brother", "he", "his"), ("cousin", "she", "her"))
RELATIVE_NAMES = ("Jess", "Mark", "Olivia", "Ben", "Tara", "Leo", "Nina", "Ryan")
STUDIES = (
    ("marine biology", "the University of Miami"), ("architecture", "a school in Chicago"),
    ("law", "Georgetown"), ("nursing", "a college upstate"), ("computer science", "Georgia Tech"),
)  # fmt: skip
EVENTS = (
    ("pottery workshop", "community arts center", "I made a lopsided bowl but I love it"),
    ("charity run", "riverside park", "we raised almost two thousand dollars"),
    ("jazz concert", "Blue Note club", "the saxophone solo gave me chills"),
    ("cooking class", "culinary school", "we learned to make fresh pasta from scratch"),
    ("book signing", "downtown bookstore", "the author signed my copy and we chatted for a bit"),
    ("support group meeting", "community center", "hearing everyone's stories was really moving"),
    ("farmers market", "town square", "I came home with way too many peaches"),
    ("photography walk", "old harbor", "I finally got a decent shot of the lighthouse"),
)
TASTES = {
    "outdoors": (
        [
            "I spent the whole weekend hiking up {peak}, my legs are still sore.",
            "Nothing beats sleeping in a tent and waking up to birds.",
            "We kayaked across the lake at sunrise, it was so peaceful.",
        ],
        ["Would {p} enjoy a camping trip in a national park?", "Is {p} more of an outdoorsy person?"],
    ),
    "reading": (
        [
            "I stayed up until 2am finishing another Agatha Christie novel.",
            "My book club is doing a mystery every month now, I'm hooked.",
            "I can't resist a good whodunit, I always try to guess the killer.",
        ],
        ["What kind of books would make a good gift for {p}?", "Would {p} like a detective novel?"],
    ),
    "music": (
        [
            "I've been practicing the violin every evening again.",
            "Playing in the community orchestra is the highlight of my week.",
            "I finally nailed that Vivaldi piece I've been working on.",
        ],
        ["Would {p} be interested in tickets to a classical concert?", "Does {p} play an instrument?"],
    ),
    "gardening": (
        [
            "The tomatoes in my backyard are finally turning red.",
            "I spent Sunday planting tulip bulbs along the fence.",
            "My little herb garden is going wild, I have basil everywhere.",
        ],
        ["Would {p} appreciate a gift card for a plant nursery?", "Does {p} have a green thumb?"],
    ),
}
PEAKS = ("Mount Rainier", "Bear Mountain", "Eagle Peak", "Mount Tam")
CITIES = ("Seattle", "Denver", "Austin", "Portland", "Boston", "San Diego", "Chicago")
SMALL_TALK = (
    "Hey {o}! It's been a while, how have you been?",
    "Ha, I knew you'd say that.",
    "Honestly I'm just glad the week is over.",
    "You always know how to make me laugh.",
    "I was just thinking about you the other day!",
    "Ugh, Mondays, am I right?",
    "That's wild, I had no idea.",
    "Sounds like you had a full week.",
    "I'm proud of you, seriously.",
    "Let me know how it goes, okay?",
    "We should grab lunch when things calm down.",
    "Oh that's so sweet.",
    "I can't believe it's already been a month.",
    "Yeah, it's been a lot lately.",
    "That sounds amazing, I'm so happy for you!",
    "Haha, that's so you.",
    "Things have been busy but good. Work is work, you know?",
    "Oh wow, tell me more!",
    "I totally get that. Let's catch up again soon.",
    "Thanks, that means a lot coming from you.",
    "Same here, honestly. The weeks just fly by.",
    "No way! When did that happen?",
    "I've been meaning to ask you about that.",
    "Anyway, I should get going, talk soon!",
    "That reminds me, I need to call my mom this week.",
    "The weather has been so weird lately, right?",
    "Good luck with everything, you've got this.",
)


# Turns on the same topics as the facts, which answer no question: the hard distractors.
NEAR_MISSES = (
    "I've always wanted a dog but our landlord won't allow pets.",
    "My neighbour's cat keeps sneaking into our garden.",
    "I'm thinking about changing jobs, but the market is rough right now.",
    "My coworker just quit to become a teacher, good for her.",
    "Have you ever been to Seattle? I hear the coffee is incredible.",
    "We went hiking once and it rained the entire time, never again.",
    "I keep buying books and never reading them, it's a problem.",
    "There's a music festival downtown next month, we should go.",
    "My cousin is still figuring out what to study, she changes her mind every week.",
    "Moving is the worst, I hope I never have to pack a box again.",
    "I tried gardening last year but everything died within a month.",
    "The new Italian place near work does amazing pasta.",
    "I signed up for a yoga class but skipped it three weeks in a row.",
    "Do you still go to that coffee shop we liked?",
    "My brother is visiting in the summer, I need to clean the guest room.",
    "I watched a documentary about the ocean last night, so relaxing.",
    "Work has been intense, we have a big deadline on Friday.",
    "I finally fixed the leaky faucet in the kitchen.",
    "We're planning a road trip but can't agree on where to go.",
    "My phone died in the middle of a call with my boss, so embarrassing.",
    "I've been trying to drink more water and sleep earlier.",
    "Our team at work is hiring, do you know anyone looking?",
    "I really should call my grandparents more often.",
    "We binge-watched a whole season of a cooking show this weekend.",
)


# People rarely say one thing per turn: most fact turns carry an aside, before or after the fact.
ASIDES = (
    "Work has been crazy, my boss keeps moving every deadline.",
    "Sorry I didn't reply sooner, my phone has been acting up.",
    "It's been raining nonstop here, I'm going stir crazy.",
    "I've been trying to cut back on coffee, it's not going well.",
    "The kids have been sick all week so I'm running on no sleep.",
    "I finally watched that show you recommended, you were right.",
    "My car is in the shop again, so I've been taking the bus.",
    "We're thinking about repainting the living room, maybe green.",
    "I started waking up at six to go for a run, can you believe it?",
    "Honestly, I just needed to tell someone.",
    "Mom called three times yesterday, she's fine, just bored.",
    "I'm trying to save money this year, so no big trips.",
    "Our internet was down for two days, it was a nightmare.",
    "I've been eating way too much takeout lately.",
    "The neighbours are renovating and the drilling never stops.",
    "Anyway, enough about me for a second.",
)
# Small talk is an opener and a follow-up, so that a conversation rarely says exactly the same twice.
FOLLOW_UPS = (
    "",
    " How are the kids doing?",
    " Anyway, what's new with you?",
    " We should really talk more often.",
    " I've had such a long day.",
    " Did you end up going out last night?",
    " My coffee is getting cold, haha.",
    " I keep meaning to text you back sooner.",
    " Work has been a circus this week.",
    " Say hi to everyone for me!",
)


@dataclass(frozen=True)
class Turn:
    id: str
    speaker: str
    text: str
    session: int
    session_date: date

    @property
    def content(self) -> str:
        return f"{self.speaker}: {self.text}"

    @property
    def metadata(self) -> dict[str, object]:
        # LoCoMo writes session times as "1:56 pm on 8 May, 2023"; the held-out protocol keeps it.
        stamp = f"{self.session_date.day} {self.session_date:%B}, {self.session_date.year}"
        return {"session_date": f"1:56 pm on {stamp}", "session": self.session}


@dataclass(frozen=True)
class Question:
    kind: str
    text: str
    evidence: tuple[str, ...]


@dataclass
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


@dataclass
class _Session:
    number: int
    day: date
    lines: list[tuple[str, str, str | None]] = field(default_factory=list)  # speaker, text, label


def generate(seed: int, conversations: int = 6, sessions: int = 12) -> list[Conversation]:
    rng = random.Random(seed)
    names = rng.sample(NAMES, conversations * 2)
    return [
        _conversation(rng, f"conv{i}", (names[2 * i], names[2 * i + 1]), sessions)
        for i in range(conversations)
    ]


def _conversation(rng: random.Random, name: str, people: tuple[str, str], count: int) -> Conversation:
    start = date(2023, 1, 9) + timedelta(days=rng.randrange(0, 60))
    days = [start]
    for _ in range(count - 1):
        days.append(days[-1] + timedelta(days=rng.randrange(12, 40)))
    sessions = [_Session(i + 1, d) for i, d in enumerate(days)]
    questions: list[tuple[str, str, list[str]]] = []  # kind, text, labels
    used_tastes = rng.sample(sorted(TASTES), 2)
    used_events = rng.sample(EVENTS, 4)
    used_jobs = rng.sample(JOBS, 2)
    used_relatives = rng.sample(RELATIVE_NAMES, 2)
    used_cities = rng.sample(CITIES, 4)
    for k, person in enumerate(people):
        tag = f"{person}."
        _pet(rng, sessions, person, tag, questions)
        _job(rng, sessions, person, tag, used_jobs[k], questions)
        _relative(rng, sessions, person, tag, used_relatives[k], questions)
        _events(rng, sessions, person, tag, used_events[2 * k : 2 * k + 2], questions)
        _taste(rng, sessions, person, tag, used_tastes[k], questions)
        _move(rng, sessions, person, tag, used_cities[2 * k : 2 * k + 2], questions)
    for session in sessions:
        for i, (speaker, text, label) in enumerate(session.lines):
            if label and rng.random() < 0.6:
                aside = rng.choice(ASIDES)
                padded = f"{aside} {text}" if rng.random() < 0.5 else f"{text} {aside}"
                session.lines[i] = (speaker, padded, label)
        for _ in range(rng.randrange(3, 7)):
            spot = rng.randrange(0, len(session.lines) + 1)
            session.lines.insert(spot, (rng.choice(people), rng.choice(NEAR_MISSES), None))
    conversation = Conversation(name, people)
    labels: dict[str, list[str]] = {}
    for session in sessions:
        lines = _interleave(rng, session.lines, people)
        for i, (speaker, text, label) in enumerate(lines):
            turn = Turn(f"{name}:S{session.number}:{i}", speaker, text, session.number, session.day)
            conversation.turns.append(turn)
            if label:
                labels.setdefault(label, []).append(turn.id)
    for kind, text, wanted in questions:
        evidence = tuple(turn_id for label in wanted for turn_id in labels[label])
        conversation.questions.append(Question(kind, text, evidence))
    return conversation


def _interleave(
    rng: random.Random, facts: list[tuple[str, str, str | None]], people: tuple[str, str]
) -> list[tuple[str, str, str | None]]:
    """The session's fact turns in order, with small talk around them, both speakers taking turns."""
    out: list[tuple[str, str, str | None]] = [(people[0], SMALL_TALK[0].format(o=people[1]), None)]

    def chat() -> str:
        return rng.choice(SMALL_TALK[1:]) + rng.choice(FOLLOW_UPS)

    for speaker, text, label in facts:
        if out[-1][0] == speaker:
            other = people[1] if speaker == people[0] else people[0]
            out.append((other, chat(), None))
        out.append((speaker, text, label))
        if rng.random() < 0.6:
            other = people[1] if speaker == people[0] else people[0]
            out.append((other, chat(), None))
    out.append(
        (people[1] if out[-1][0] == people[0] else people[0], "Anyway, I should get going, talk soon!", None)
    )
    return out


def _put(sessions: list[_Session], index: int, speaker: str, text: str, label: str | None) -> date:
    session = sessions[max(0, min(index, len(sessions) - 1))]
    session.lines.append((speaker, text, label))
    return session.day


def _pet(
    rng: random.Random, s: list[_Session], p: str, tag: str, q: list[tuple[str, str, list[str]]]
) -> None:
    species, young, names = rng.choice(PETS)
    pet = rng.choice(names)
    at = rng.randrange(0, 3)
    _put(
        s,
        at,
        p,
        f"Big news: we brought home a little {young} last weekend! We named {pet_pronoun(species)} {pet}.",
        tag + "pet",
    )
    _put(
        s,
        at + 3,
        p,
        f"{pet} chewed through my favourite shoes this morning, I can't even be mad.",
        tag + "pet2",
    )
    q.append(("single-hop", f"What is the name of {p}'s {species}?", [tag + "pet"]))
    q.append(("temporal", f"When did {p} get {pet}?", [tag + "pet"]))
    q.append(("multi-hop", f"What did {p}'s {species} destroy?", [tag + "pet", tag + "pet2"]))


def pet_pronoun(species: str) -> str:
    return "him" if species == "dog" else "her"


def _job(
    rng: random.Random,
    s: list[_Session],
    p: str,
    tag: str,
    job: tuple[str, str],
    q: list[tuple[str, str, list[str]]],
) -> None:
    title, place = job
    at = rng.randrange(1, 5)
    _put(
        s,
        at,
        p,
        f"I finally did it, I accepted an offer to work as a {title} at {place}. First day was Monday!",
        tag + "job",
    )
    _put(s, at + 2, p, f"Long shifts lately. The people at {place} are great though.", None)
    q.append(("single-hop", f"What is {p}'s new job?", [tag + "job"]))
    q.append(("temporal", f"When did {p} start the {title} job?", [tag + "job"]))


def _relative(
    rng: random.Random, s: list[_Session], p: str, tag: str, name: str, q: list[tuple[str, str, list[str]]]
) -> None:
    relation, subject, _possessive = rng.choice(RELATIVES)
    field_, school = rng.choice(STUDIES)
    at = rng.randrange(0, 4)
    _put(s, at, p, f"My {relation} {name} is staying with us this week, it's chaos but fun.", tag + "rel")
    _put(
        s,
        at + rng.randrange(2, 4),
        p,
        f"{name} got accepted to {school}! {subject.capitalize()} wants to study {field_}.",
        tag + "rel2",
    )
    q.append(("multi-hop", f"What does {p}'s {relation} want to study?", [tag + "rel", tag + "rel2"]))
    q.append(("multi-hop", f"Which school accepted {p}'s {relation}?", [tag + "rel", tag + "rel2"]))


def _events(
    rng: random.Random,
    s: list[_Session],
    p: str,
    tag: str,
    events: list[tuple[str, str, str]],
    q: list[tuple[str, str, list[str]]],
) -> None:
    by_month: dict[str, list[str]] = {}
    for i, (event, place, detail) in enumerate(events):
        at = rng.randrange(0, len(s))
        label = f"{tag}event{i}"
        day = _put(s, at, p, f"Yesterday I went to a {event} at the {place}, {detail}.", label)
        q.append(("temporal", f"When did {p} go to the {event}?", [label]))
        q.append(("single-hop", f"Where did {p} attend the {event}?", [label]))
        by_month.setdefault(f"{day - timedelta(days=1):%B %Y}", []).append(label)
    for month, labels in by_month.items():
        q.append(("temporal", f"Which event did {p} go to in {month}?", labels))


def _taste(
    rng: random.Random, s: list[_Session], p: str, tag: str, taste: str, q: list[tuple[str, str, list[str]]]
) -> None:
    lines, asks = TASTES[taste]
    spots = rng.sample(range(len(s)), len(lines))
    for i, (line, at) in enumerate(zip(lines, spots, strict=True)):
        _put(s, at, p, line.format(peak=rng.choice(PEAKS)), f"{tag}taste{i}")
    labels = [f"{tag}taste{i}" for i in range(len(lines))]
    for ask in asks:
        q.append(("open-domain", ask.format(p=p), labels))


def _move(
    rng: random.Random,
    s: list[_Session],
    p: str,
    tag: str,
    cities: list[str],
    q: list[tuple[str, str, list[str]]],
) -> None:
    old, new = cities
    at = rng.randrange(1, len(s) - 3)
    _put(
        s,
        at - 1,
        p,
        f"I love our little apartment in {old}, the coffee shop downstairs knows my order.",
        tag + "old",
    )
    _put(
        s,
        at + 1,
        p,
        f"We're packing boxes, we move to {new} at the end of the month. Scary but exciting!",
        tag + "move",
    )
    _put(
        s,
        at + 3,
        p,
        f"The new place in {new} is finally unpacked and the neighbours are lovely.",
        tag + "new",
    )
    q.append(("temporal", f"Where did {p} live before the move?", [tag + "old"]))
    q.append(("single-hop", f"Which city did {p} move to?", [tag + "move", tag + "new"]))
    q.append(("temporal", f"When did {p} move to {new}?", [tag + "move"]))
