"""The first search of a root never indexed, with no hit, says the index is still being built (issue: "no hits"
during the first build), end to end with the default settings: the real CLI and the service it auto-starts write
the text rows first and embed after; once that is done an empty search is a plain "no hits". The Claude Code prompt
hook, run as Claude Code runs it, says the same in one line of context."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO, build
from tests.e2e.test_one_service import memsearch, until

pytestmark = pytest.mark.slow

NOWHERE = "xylophone quasar"  # in no file
FILES = 300  # enough that embedding them outlasts the first answers, whoever (CLI or service) writes the text rows


def _tree(base, name: str) -> str:
    files = {"MEMORY.md": f"# {name}\n\nCore memory.\n", "notes/MEMORY.md": "# Notes\n\nDated notes.\n"}
    files |= {f"notes/n{i:03d}.md": f"# Note {i}\n\n" + f"The otter number {i} swims upstream at dawn. " * 40 + "\n"
              for i in range(FILES)}
    return str(build(base / name, files))


def test_an_empty_first_search_says_the_root_is_still_being_indexed(tmp_path):
    root = _tree(tmp_path, "mem")
    first = memsearch("search", root, NOWHERE).stdout
    assert re.search(rf"^no hits yet: .*mem is still being indexed \(\d+ of {FILES + 1} files\); search again in a "
                     r"few seconds$", first, re.M), first  # its core MEMORY.md is not indexed
    other = _tree(tmp_path, "other")
    answer = json.loads(memsearch("search", other, NOWHERE, "--json").stdout)
    assert answer["hits"] == [] and answer["indexing"]["files"] == FILES + 1
    assert answer["indexing"]["embedded"] < FILES + 1

    def embedded():
        done = memsearch("search", root, NOWHERE, "--mode", "keyword").stdout
        return done if "no hits yet" not in done else None

    assert until(embedded, timeout=300).strip() == "no hits"


def test_the_prompt_hook_of_a_root_still_being_indexed_says_so(tmp_path):
    root = _tree(tmp_path, "hooked")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("MEMSEARCH_AUTOSTART", None)
    done = subprocess.run([sys.executable, "-m", "memsearch.harness.hooks", "prompt", "--root", root],
                          input=json.dumps({"prompt": NOWHERE, "hook_event_name": "UserPromptSubmit"}),
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout, done.stderr  # the first prompt: no service yet, it starts it
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert re.fullmatch(rf"Memory recalled for this prompt \(memsearch\): nothing yet: memory is still being indexed "
                        rf"\(\d+ of {FILES + 1} files\), so recall is incomplete; .*", context), context
