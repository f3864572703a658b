"""The content of the agent-written corpus (benchmarks/agentmem.py): folders, their notes, and the questions.

Each :class:`Folder` is one memory directory an agent filed notes in: plain notes (``notes``:
file name -> text, written with ``create`` and later extended with ``insert`` where a note holds
``"\\n+ "`` appends), optionally a hand-written ``MEMORY.md`` that *names* subjects without holding
the answers (``index``), and dated entries (``dated``: ISO date -> lines, several writes to the
same day's file). ``questions`` are what an agent asks mid-task: (category, query, path, answer),
where ``answer`` is a substring of exactly one line of ``path`` (the relevant line). Categories:

* ``fact`` - the question shares words with the answer line;
* ``paraphrase`` - it shares few words with any note (the meaning, not the wording);
* ``latest`` - "the latest / last / most recent X": the newest dated note holds the answer,
  older dated notes hold older values of the same thing;
* ``folder`` - the question names the folder (a generated ``MEMORY.md`` stub names it too);
* ``index`` - the question names a subject a hand-written ``MEMORY.md`` names.

``split`` is "tune" or "test": the held-out folders are never looked at while tuning ranking.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Folder", "FOLDERS", "ROOT_NOTE", "EXTRA"]


@dataclass(frozen=True)
class Folder:
    dir: str
    split: str
    notes: dict[str, str] = field(default_factory=dict)
    index: str | None = None
    dated: dict[str, list[str]] = field(default_factory=dict)
    dated_dir: str = "notes"
    questions: tuple[tuple[str, str, str, str], ...] = ()


ROOT_NOTE = ("user.md", "# User\n\n- Name: Dana Okafor, staff engineer; works mostly in Python and Rust.\n"
             "- Keep answers short; link the note you used.\n")

FOLDERS: tuple[Folder, ...] = (
    # ---------------------------------------------------------------- tuning folders
    Folder(
        "projects/atlas", "tune",
        index=("# Atlas\n\nThe data-platform migration off the old Hadoop cluster.\n\n"
               "- plans.md has the schedule and the budget.\n- decisions.md records what we chose and why.\n"
               "- risks.md lists what could go wrong.\n- notes/ holds the weekly status notes.\n"),
        notes={
            "plans.md": ("# Atlas plans\n\n## Schedule\n\n- Phase 1 (ingest jobs) ends 2026-04-17.\n"
                         "- Phase 2 moves the reporting marts; cutover weekend is 2026-06-13.\n"
                         "- Hadoop cluster gets switched off on 2026-07-01 if nothing is left on it.\n\n"
                         "## Budget\n\n- Approved spend: EUR 180k for the year, 40k of it for the parallel run.\n"
                         "+ - Finance asked for a re-forecast after phase 1; cloud bill runs at 14k per month.\n"),
            "decisions.md": ("# Atlas decisions\n\n- Storage format: Iceberg tables on S3, not Delta, because the query "
                             "engines we keep (Trino, Spark) both read Iceberg natively.\n"
                             "- Orchestration stays on Airflow 2.9; Dagster was considered and dropped for lack of time.\n"
                             "+ - Late-arriving events: we reprocess the last 3 days nightly instead of using upserts.\n"),
            "risks.md": ("# Atlas risks\n\n- The fraud team's Pig scripts have no owner; nobody can vouch for what they do.\n"
                         "- Cross-region egress could double the cloud bill if the marts stay in eu-west-1.\n"),
        },
        dated={
            "2026-03-02": ["# Atlas status 2026-03-02", "", "- Load test: p95 query latency 420 ms on the new cluster.",
                           "- 12 of 41 ingest jobs migrated."],
            "2026-03-09": ["# Atlas status 2026-03-09", "", "- Load test: p95 query latency 380 ms after partition pruning.",
                           "- 19 of 41 ingest jobs migrated.", "- Blocker: Kafka connector drops headers."],
            "2026-03-16": ["# Atlas status 2026-03-16", "", "- Load test: p95 query latency 350 ms.",
                           "- 27 of 41 ingest jobs migrated.", "- Blocker: service account for the marts still pending."],
            "2026-03-23": ["# Atlas status 2026-03-23", "", "- Load test: p95 query latency 290 ms with the larger coordinator.",
                           "- 33 of 41 ingest jobs migrated.", "- Blocker: the fraud team's Pig scripts, still unowned."],
        },
        questions=(
            ("index", "what is the atlas schedule for the cutover", "plans.md", "cutover weekend is 2026-06-13"),
            ("index", "how much budget does atlas have", "plans.md", "Approved spend: EUR 180k"),
            ("fact", "why did atlas pick Iceberg over Delta", "decisions.md", "Storage format: Iceberg"),
            ("paraphrase", "which workflow scheduler are we keeping for the migration", "decisions.md", "Orchestration stays on Airflow"),
            ("latest", "latest atlas load test latency", "notes/2026-03-23.md", "p95 query latency 290 ms"),
            ("latest", "how many ingest jobs have been migrated so far, most recent count", "notes/2026-03-23.md", "33 of 41"),
            ("latest", "what is the current blocker on atlas", "notes/2026-03-23.md", "Blocker: the fraud team"),
            ("paraphrase", "could moving data between regions blow up our costs", "risks.md", "Cross-region egress"),
            ("fact", "how are late arriving events handled in atlas", "decisions.md", "Late-arriving events"),
        ),
    ),
    Folder(
        "clients/acme", "tune",
        notes={
            "contract.md": ("# Acme contract\n\n- Master services agreement signed 2025-11-04, three years.\n"
                            "- Renewal notice period: 90 days before 2028-11-04, in writing to legal@acme.example.\n"
                            "- SLA: 99.5% monthly uptime, credits of 5% per 0.5% below.\n"),
            "contacts.md": ("# Acme contacts\n\n- Priya Raman: head of operations, our sponsor; prefers calls on Tuesdays.\n"
                            "- Tom Weller: procurement; every invoice goes through him.\n"
                            "+ - Jonas Berg replaced Tom Weller in procurement from 2026-03-01.\n"),
            "feedback.md": ("# Acme feedback\n\n- They want CSV exports of the monthly usage report.\n"
                            "- Complaint 2026-02-12: dashboards slow on Monday mornings (their batch load).\n"),
        },
        questions=(
            ("folder", "acme renewal notice period", "contract.md", "Renewal notice period"),
            ("folder", "who handles procurement at acme now", "contacts.md", "Jonas Berg replaced"),
            ("fact", "what uptime does the acme SLA promise", "contract.md", "SLA: 99.5%"),
            ("paraphrase", "what did the customer grumble about regarding start-of-week performance", "feedback.md",
             "dashboards slow on Monday"),
            ("folder", "acme sponsor", "contacts.md", "Priya Raman"),
        ),
    ),
    Folder(
        "people", "tune",
        index=("# People\n\nColleagues and what to remember about them.\n\n- alice.md: Alice, the design lead, and how she "
               "likes reviews.\n- bruno.md: Bruno from SRE, on-call habits.\n- chen.md: Chen, the data scientist, "
               "and her projects.\n"),
        notes={
            "alice.md": ("# Alice Moreau\n\n- Design lead on the web app.\n- Wants design reviews as a Figma link plus "
                         "three bullet points, never a slide deck.\n+ - Out on parental leave from 2026-04-01 to 2026-07-15.\n"),
            "bruno.md": ("# Bruno Teixeira\n\n- SRE, in Lisbon (UTC+0/UTC+1).\n- Takes on-call in the week of the month's "
                         "first Monday; swaps need two days' notice.\n- Allergic to shellfish: keep it in mind for team dinners.\n"),
            "chen.md": ("# Chen Li\n\n- Data scientist; owns the churn model.\n- Churn model v3 AUC 0.81 on the March holdout.\n"
                        "+ - Chen moves to the pricing team in May.\n"),
        },
        questions=(
            ("index", "how does alice like design reviews", "alice.md", "Figma link plus"),
            ("paraphrase", "when is the designer away for her baby", "alice.md", "parental leave"),
            ("fact", "how much notice does Bruno need for an on-call swap", "bruno.md", "swaps need two days"),
            ("paraphrase", "any food restrictions for the team meal", "bruno.md", "Allergic to shellfish"),
            ("index", "which projects does chen own", "chen.md", "owns the churn model"),
        ),
    ),
    Folder(
        "infra/deploy", "tune",
        notes={
            "runbook.md": ("# Deploy runbook\n\n1. Tag the release: `git tag vX.Y.Z` and push the tag.\n"
                           "2. The pipeline builds the image and deploys to staging automatically.\n"
                           "3. Promote to production with `make promote ENV=prod` after the smoke tests pass.\n"
                           "+ 4. Announce in #releases with the changelog link.\n"),
            "rollbacks.md": ("# Rollbacks\n\n- Roll back with `make rollback ENV=prod TO=<previous tag>`; it takes about 4 minutes.\n"
                             "- Database migrations are forward-only: never roll back past a migration, ship a fix instead.\n"),
            "freeze.md": ("# Deploy freeze\n\n- No production deploys from 2026-12-18 to 2027-01-04.\n"
                          "- Exceptions need a written OK from the VP of engineering.\n"),
        },
        questions=(
            ("folder", "deploy to production command", "runbook.md", "make promote ENV=prod"),
            ("paraphrase", "how do I undo a bad release", "rollbacks.md", "make rollback"),
            ("fact", "can we roll back a database migration", "rollbacks.md", "forward-only"),
            ("paraphrase", "when can't we ship over the holidays", "freeze.md", "No production deploys"),
        ),
    ),
    Folder(
        "preferences", "tune",
        notes={
            "coding-style.md": ("# Coding style\n\n- Type hints everywhere; run mypy --strict before a PR.\n"
                                "- Prefer dataclasses over dicts for records.\n- Tests with pytest, no unittest classes.\n"
                                "+ - Line length 100, enforced by ruff.\n"),
            "communication.md": ("# Communication\n\n- Dana wants a summary first, details after.\n"
                                 "- No meetings before 10:00 CET; async updates in writing are preferred.\n"),
        },
        questions=(
            ("fact", "what line length does Dana use", "coding-style.md", "Line length 100"),
            ("paraphrase", "what test framework should I write the checks in", "coding-style.md", "Tests with pytest"),
            ("paraphrase", "earliest time I can book a call with Dana", "communication.md", "No meetings before 10:00"),
            ("folder", "dana's preferences for records in code", "coding-style.md", "dataclasses over dicts"),
        ),
    ),
    Folder(
        "travel/lisbon-2026", "tune",
        notes={
            "itinerary.md": ("# Lisbon trip, May 2026\n\n- Fly out 2026-05-14, back 2026-05-19.\n"
                             "- Day 2: Sintra, train from Rossio at 09:11.\n- Day 3: team offsite at the LX Factory.\n"),
            "bookings.md": ("# Bookings\n\n- Hotel: Casa do Largo, Alfama, booking ref HX-55821, breakfast included.\n"
                            "- Flight TP 1349 leaves at 07:05; seat 14C.\n+ - Dinner for 8 at Taberna da Rua das Flores, 20:30 on the 16th.\n"),
        },
        questions=(
            ("folder", "lisbon hotel booking reference", "bookings.md", "booking ref HX-55821"),
            ("paraphrase", "where are we sleeping on the Portugal trip", "bookings.md", "Hotel: Casa do Largo"),
            ("fact", "what time is the train to Sintra", "itinerary.md", "train from Rossio"),
            ("fact", "which seat do I have on the flight", "bookings.md", "seat 14C"),
        ),
    ),
    Folder(
        "journal", "tune", dated_dir="",
        dated={
            "2026-02-16": ["# 2026-02-16", "", "- Ran 8 km, knee fine.", "- Weight 81.4 kg."],
            "2026-02-23": ["# 2026-02-23", "", "- Ran 10 km along the river.", "- Weight 80.9 kg.",
                           "- Started reading 'The Pragmatic Programmer' again."],
            "2026-03-02": ["# 2026-03-02", "", "- Ran 12 km, left knee sore after km 9.", "- Weight 80.2 kg."],
            "2026-03-09": ["# 2026-03-09", "", "- Physio: rest the knee for a week, then easy 5 km runs.",
                           "- Weight 80.5 kg."],
            "2026-03-16": ["# 2026-03-16", "", "- Easy 5 km run, no pain.", "- Weight 79.8 kg."],
        },
        questions=(
            ("latest", "what was my most recent weight", "2026-03-16.md", "Weight 79.8 kg"),
            ("latest", "how far did I run last time", "2026-03-16.md", "Easy 5 km run"),
            ("fact", "what did the physio say about the knee", "2026-03-09.md", "Physio: rest the knee"),
            ("paraphrase", "which programming book did I pick up again", "2026-02-23.md", "Pragmatic Programmer"),
        ),
    ),
    Folder(
        "finance", "tune",
        index=("# Finance\n\nHousehold money.\n\n- budget.md has the monthly budget and the savings rate.\n"
               "- invoices.md tracks freelance invoices and who has not paid.\n- taxes.md: deadlines and the accountant.\n"),
        notes={
            "budget.md": ("# Budget\n\n- Monthly budget: rent 1,450, groceries 520, transport 130, everything else 600 (EUR).\n"
                          "- Savings rate target: 25% of net pay into the index fund on the 2nd.\n"),
            "invoices.md": ("# Invoices\n\n- INV-2026-004, Northwind, EUR 3,200, sent 2026-02-01, paid 2026-02-20.\n"
                            "- INV-2026-007, Contoso, EUR 1,850, sent 2026-03-01, unpaid; reminder sent 2026-03-20.\n"),
            "taxes.md": ("# Taxes\n\n- Accountant: Marta Silva, marta@silva-tax.example.\n"
                         "- Annual return due 2026-06-30; quarterly VAT on the 20th after each quarter.\n"),
        },
        questions=(
            ("index", "what is my monthly budget for groceries", "budget.md", "Monthly budget"),
            ("index", "which invoices are still unpaid", "invoices.md", "unpaid; reminder"),
            ("paraphrase", "who does my tax return", "taxes.md", "Accountant: Marta Silva"),
            ("index", "savings rate", "budget.md", "Savings rate target"),
        ),
    ),
    Folder(
        "learning/rust", "tune",
        notes={
            "borrow-checker.md": ("# Borrow checker notes\n\n- You cannot hold a mutable borrow while an immutable one is live.\n"
                                  "- Fix for 'cannot borrow as mutable': clone the key first, or scope the first borrow in a block.\n"),
            "async.md": ("# Async Rust\n\n- Tokio is the runtime we use; #[tokio::main] on main.\n"
                         "- Never hold a std Mutex guard across .await; use tokio::sync::Mutex.\n"),
        },
        questions=(
            ("folder", "rust async runtime we use", "async.md", "Tokio is the runtime"),
            ("paraphrase", "can a lock be kept while awaiting", "async.md", "Never hold a std Mutex"),
            ("fact", "how to fix cannot borrow as mutable", "borrow-checker.md", "Fix for 'cannot borrow"),
        ),
    ),
    Folder(
        "health", "tune",
        notes={
            "allergies.md": ("# Allergies\n\n- Penicillin: rash (2019). Tell every doctor.\n- Mild hay fever in May and June.\n"),
            "doctors.md": ("# Doctors\n\n- GP: Dr. Anja Keller, Praxis am Markt, phone 030 555 0142.\n"
                           "- Dentist check-up every 6 months; next one 2026-05-07.\n"),
        },
        questions=(
            ("paraphrase", "which antibiotic must I avoid", "allergies.md", "Penicillin"),
            ("fact", "when is my next dentist check-up", "doctors.md", "next one 2026-05-07"),
            ("folder", "health: GP phone number", "doctors.md", "GP: Dr. Anja Keller"),
        ),
    ),
    # ---------------------------------------------------------------- held-out folders
    Folder(
        "projects/billing", "test",
        index=("# Billing\n\nMoving invoicing from the in-house system to Stripe Billing.\n\n"
               "- migration.md has the plan, the cutover date and the rollback steps.\n"
               "- incidents.md lists what broke in production.\n- notes/ holds dated progress notes.\n"),
        notes={
            "migration.md": ("# Billing migration\n\n- Plan: dual-write invoices to both systems for one full billing cycle.\n"
                             "- Cutover date: 2026-05-01, the first day of a billing month.\n"
                             "- Rollback: switch the INVOICE_BACKEND flag back to legacy; Stripe keeps the drafts.\n"),
            "incidents.md": ("# Billing incidents\n\n- 2026-02-19: 212 customers double-charged; webhook retried without an "
                             "idempotency key. Fixed by keying on the invoice id.\n"
                             "+ - 2026-03-11: tax rounding off by one cent on Swiss invoices; Stripe rounds per line, we rounded per invoice.\n"),
        },
        dated={
            "2026-03-03": ["# Billing progress 2026-03-03", "", "- Dual-write running for 18% of accounts.",
                           "- Reconciliation mismatches: 41 this week."],
            "2026-03-10": ["# Billing progress 2026-03-10", "", "- Dual-write running for 45% of accounts.",
                           "- Reconciliation mismatches: 17 this week."],
            "2026-03-17": ["# Billing progress 2026-03-17", "", "- Dual-write running for 80% of accounts.",
                           "- Reconciliation mismatches: 6 this week, all currency conversions."],
        },
        questions=(
            ("index", "billing cutover date", "migration.md", "Cutover date: 2026-05-01"),
            ("index", "how do we roll back the billing migration", "migration.md", "Rollback: switch"),
            ("latest", "latest reconciliation mismatch count", "notes/2026-03-17.md", "mismatches: 6"),
            ("latest", "what share of accounts is on dual-write now", "notes/2026-03-17.md", "80% of accounts"),
            ("paraphrase", "why were some people charged twice", "incidents.md", "double-charged"),
            ("fact", "what caused the Swiss tax rounding problem", "incidents.md", "tax rounding off"),
        ),
    ),
    Folder(
        "clients/globex", "test",
        notes={
            "contract.md": ("# Globex contract\n\n- Pilot contract, 6 months from 2026-01-15, fixed fee EUR 45k.\n"
                            "- Conversion to a full licence needs 3 of 4 success criteria met.\n"
                            "+ - Success criteria: import under 2 hours, 95% match rate, SSO, weekly reports.\n"),
            "contacts.md": ("# Globex contacts\n\n- Hank Scorpio: CEO, signs everything above EUR 20k.\n"
                            "- Lena Fischer: IT lead, our day-to-day contact; Slack Connect channel #globex-pilot.\n"),
        },
        questions=(
            ("folder", "globex pilot fee", "contract.md", "fixed fee EUR 45k"),
            ("folder", "who is our day-to-day contact at globex", "contacts.md", "Lena Fischer"),
            ("paraphrase", "what must the trial achieve to become a full deal", "contract.md", "Success criteria"),
            ("fact", "who signs contracts above 20k at Globex", "contacts.md", "Hank Scorpio"),
        ),
    ),
    Folder(
        "meetings", "test", dated_dir="",
        dated={
            "2026-03-03": ["# Weekly sync 2026-03-03", "", "- Decided: hiring freeze on contractors until Q3.",
                           "- Next offsite venue: still open."],
            "2026-03-10": ["# Weekly sync 2026-03-10", "", "- Decided: offsite venue is the LX Factory in Lisbon.",
                           "- Action: Dana drafts the on-call policy."],
            "2026-03-17": ["# Weekly sync 2026-03-17", "", "- Decided: on-call policy v1 accepted, pay 150 EUR per weekend.",
                           "- Action: Bruno sets up the paging rotation."],
            "2026-03-24": ["# Weekly sync 2026-03-24", "", "- Decided: move the weekly sync to Wednesdays at 11:00.",
                           "- Action: Chen presents churn model v3 next week."],
        },
        questions=(
            ("latest", "what was decided in the most recent weekly sync", "2026-03-24.md", "move the weekly sync"),
            ("latest", "latest action item from the weekly meeting", "2026-03-24.md", "Chen presents churn"),
            ("fact", "how much is on-call paid per weekend", "2026-03-17.md", "pay 150 EUR"),
            ("paraphrase", "are we bringing in freelancers this spring", "2026-03-03.md", "hiring freeze on contractors"),
        ),
    ),
    Folder(
        "infra/monitoring", "test",
        notes={
            "alerts.md": ("# Alerts\n\n- Page on: error rate above 2% for 5 minutes, p99 above 1.5 s for 10 minutes.\n"
                          "- Disk alerts at 80% warn, 90% page.\n+ - Silence flapping alerts with a 30-minute maintenance window in Alertmanager.\n"),
            "dashboards.md": ("# Dashboards\n\n- Grafana: 'API overview' is the one to open first in an incident.\n"
                              "- Retention: Prometheus keeps 15 days, Thanos keeps 13 months.\n"),
        },
        questions=(
            ("folder", "monitoring alert thresholds for error rate", "alerts.md", "error rate above 2%"),
            ("paraphrase", "how long do we keep metrics history", "dashboards.md", "Retention: Prometheus"),
            ("fact", "which grafana dashboard to open first in an incident", "dashboards.md", "API overview"),
            ("paraphrase", "how to quiet an alert that keeps firing on and off", "alerts.md", "Silence flapping"),
        ),
    ),
    Folder(
        "home", "test",
        index=("# Home\n\nThe flat and the garden.\n\n- garden.md has the planting calendar and the watering.\n"
               "- repairs.md lists open repairs and the tradespeople we trust.\n"),
        notes={
            "garden.md": ("# Garden\n\n- Tomatoes: sow indoors mid-March, plant out after the last frost (mid-May).\n"
                          "- Water the beds every second evening in summer, 10 litres per square metre.\n"),
            "repairs.md": ("# Repairs\n\n- Leaking kitchen tap: plumber Kemal Aydin booked for 2026-03-28.\n"
                           "- Balcony door sticks in winter; carpenter quote EUR 340.\n"),
        },
        questions=(
            ("index", "garden planting calendar for tomatoes", "garden.md", "Tomatoes: sow"),
            ("index", "open repairs and who is fixing them", "repairs.md", "plumber Kemal Aydin"),
            ("paraphrase", "how often should the vegetable patch get water", "garden.md", "Water the beds"),
        ),
    ),
    Folder(
        "recipes", "test",
        notes={
            "bread.md": ("# Sourdough\n\n- 500 g flour, 350 g water, 100 g starter, 10 g salt.\n"
                         "- Bulk ferment 5 hours at 24 C, shape, then overnight in the fridge.\n- Bake 250 C, 20 min lid on, 25 min lid off.\n"),
            "curry.md": ("# Chickpea curry\n\n- Onion, garlic, ginger, 2 tbsp curry paste, 1 tin coconut milk, 2 tins chickpeas.\n"
                         "- Simmer 20 minutes; spinach at the end. Serves 4.\n"),
        },
        questions=(
            ("fact", "sourdough hydration how much water", "bread.md", "350 g water"),
            ("paraphrase", "how hot should the oven be for the loaf", "bread.md", "Bake 250 C"),
            ("folder", "recipes: what goes in the curry", "curry.md", "curry paste"),
        ),
    ),
    Folder(
        "hiring", "test",
        notes={
            "candidates.md": ("# Candidates\n\n- Sam Ortiz, backend: strong system design, weak on testing; second round 2026-03-19.\n"
                              "- Mei Tanaka, data engineer: offer sent 2026-03-12, EUR 78k.\n"
                              "+ - Mei Tanaka accepted on 2026-03-18; starts 2026-05-04.\n"),
            "interview-loop.md": ("# Interview loop\n\n- Screen (30 min), take-home (4 h cap), system design, team fit.\n"
                                  "- Debrief within 24 hours; hire needs two strong yes votes.\n"),
        },
        questions=(
            ("fact", "did Mei Tanaka accept the offer", "candidates.md", "Mei Tanaka accepted"),
            ("paraphrase", "how many thumbs up does a new hire need", "interview-loop.md", "two strong yes"),
            ("folder", "hiring: take-home time limit", "interview-loop.md", "take-home (4 h cap)"),
            ("paraphrase", "what are the backend applicant's weaknesses", "candidates.md", "weak on testing"),
        ),
    ),
    Folder(
        "reading", "test",
        notes={
            "books.md": ("# Books\n\n- Finished 'Designing Data-Intensive Applications' in February; chapter 9 on "
                         "consistency is the one to reread.\n- Next: 'The Manager's Path' (recommended by Priya).\n"),
            "papers.md": ("# Papers\n\n- ColBERT: late interaction, one vector per token, max-sim at query time.\n"
                          "- BM25 is still a strong baseline on out-of-domain retrieval (BEIR, 2021).\n"),
        },
        questions=(
            ("paraphrase", "which chapter about consistency should I revisit", "books.md", "chapter 9"),
            ("fact", "what does ColBERT do", "papers.md", "ColBERT: late interaction"),
            ("folder", "reading list: next book", "books.md", "The Manager's Path"),
        ),
    ),
    Folder(
        "projects/search-revamp", "test",
        notes={
            "design.md": ("# Search revamp design\n\n- Hybrid retrieval: BM25 plus embeddings, fused with RRF (k=60) for v1.\n"
                          "- Index per tenant; no cross-tenant queries ever.\n"),
            "evaluation.md": ("# Search evaluation\n\n- Offline set: 400 queries labelled by support staff.\n"
                              "- v1 nDCG@10 0.61 against 0.52 for the old Elasticsearch setup.\n"),
        },
        questions=(
            ("fact", "how does the search revamp fuse BM25 and embeddings", "design.md", "fused with RRF"),
            ("paraphrase", "did the new retrieval beat the old Elastic setup", "evaluation.md", "nDCG@10 0.61"),
            ("folder", "search revamp tenant isolation", "design.md", "Index per tenant"),
        ),
    ),
    Folder(
        "family", "test",
        index=("# Family\n\n- birthdays.md has everyone's birthday and gift ideas.\n"
               "- school.md: the kids' school, term dates, and the teachers.\n"),
        notes={
            "birthdays.md": ("# Birthdays\n\n- Mum: 1958-09-12; likes orchids and crime novels.\n"
                             "- Leo: 2017-06-03; wants a bike with gears this year.\n"),
            "school.md": ("# School\n\n- Leo is in year 3 at Grundschule am Park; teacher Frau Brandt.\n"
                          "- Summer holidays start 2026-07-09.\n"),
        },
        questions=(
            ("index", "birthday gift idea for Leo", "birthdays.md", "bike with gears"),
            ("index", "when do the school holidays start", "school.md", "Summer holidays start"),
            ("paraphrase", "what present would my mother enjoy", "birthdays.md", "orchids and crime novels"),
            ("fact", "who is Leo's teacher", "school.md", "teacher Frau Brandt"),
        ),
    ),
)

#: Notes no question asks about: what else an agent files in the same folders (distractors).
EXTRA: dict[str, dict[str, str]] = {
    "clients/acme": {"meetings.md": "# Acme meetings\n\n- 2026-02-10 quarterly review: usage up 18%, they asked about SSO.\n"
                                    "- 2026-03-10: demo of the new export screen; Priya happy, wants it in April.\n"},
    "infra/deploy": {"ci.md": "# CI\n\n- GitHub Actions; the test job takes about 11 minutes.\n"
                              "- Flaky: test_websocket_reconnect, quarantined with a skip marker.\n"},
    "travel/lisbon-2026": {"packing.md": "# Packing\n\n- Adapter not needed (EU plugs).\n- Light rain jacket; "
                                         "comfortable shoes for the hills.\n"},
    "learning/rust": {"traits.md": "# Traits\n\n- impl Trait in argument position is sugar for a generic.\n"
                                   "- dyn Trait needs a pointer (Box, &) because its size is unknown.\n"},
    "health": {"sleep.md": "# Sleep\n\n- Aim for 7.5 hours; no screens after 22:30.\n- Magnesium in the evening "
                           "helped in January.\n"},
    "projects/billing": {"pricing.md": "# Pricing\n\n- Three plans: Starter 29, Team 99, Business 299 EUR per month.\n"
                                       "- Annual billing gets two months free.\n"},
    "infra/monitoring": {"oncall.md": "# On-call\n\n- PagerDuty schedule 'platform-primary', weekly handover Monday 10:00.\n"
                                      "- Escalation after 15 minutes to the secondary.\n"},
    "recipes": {"pancakes.md": "# Pancakes\n\n- 200 g flour, 2 eggs, 300 ml milk, pinch of salt.\n"
                               "- Rest the batter 20 minutes.\n"},
    "reading": {"articles.md": "# Articles\n\n- 'Choose boring technology' (Dan McKinley): spend innovation tokens wisely.\n"},
    "hiring": {"job-ads.md": "# Job ads\n\n- Senior backend ad live on 2026-02-20; 64 applicants so far.\n"},
    "home": {"utilities.md": "# Utilities\n\n- Electricity: green tariff, 31.2 ct/kWh; meter read due every January.\n"},
    "preferences": {"tools.md": "# Tools\n\n- Editor: Neovim with the LSP setup in dotfiles; terminal: WezTerm.\n"},
    "people": {"diego.md": "# Diego Alvarez\n\n- Product manager for billing; weekly 1:1 on Thursdays.\n"},
}
