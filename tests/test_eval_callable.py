"""``evaluate(env_id, split, policy)`` takes a function ``observation -> completion`` or a
``Policy`` object as well as a spec string (issue 27, item 3); the docs' example runs."""

from __future__ import annotations

import json
import re
import runpy
from typing import Any

import pytest
from conftest import ROOT

from seed_gym.evaluate import evaluate
from seed_gym.policies import OraclePolicy

DOC = ROOT / "docs" / "evaluation.md"
SOKOBAN = "seed_gym/Sokoban-v0"


def doc_example() -> str:
    text = DOC.read_text()
    found = re.search(r"<!-- example: callable-policy -->\n```python\n(.*?)```", text, re.S)
    assert found, "docs/evaluation.md lost its callable-policy example"
    return found.group(1)


def test_docs_example_runs_and_wins_every_task(tmp_path, capsys):
    script = tmp_path / "example.py"
    script.write_text(doc_example())
    scope = runpy.run_path(str(script), run_name="__main__")
    results = scope["results"]
    assert results["policy"] == "callable:__main__.solve"
    assert results["episodes"] == results["manifest_tasks"] > 0
    assert results["success_rate"] == 1.0
    assert results["invalid_action_rate"] == 0.0
    assert "callable:__main__.solve 1.0" in capsys.readouterr().out


def test_function_gets_the_agent_observation_and_results_have_the_usual_shape(tmp_path):
    seen: list[Any] = []

    def always_up(observation):
        seen.append(observation)
        return "<think>push</think><action>up</action>"

    results = evaluate(
        SOKOBAN, "seen", always_up, episodes=3, max_steps=2, out=tmp_path, progress=False, n_boot=10
    )
    assert set(seen[0]) == {"messages", "images"}
    assert seen[0]["messages"][-1]["role"] == "user"
    assert isinstance(seen[0]["messages"][-1]["content"], str)
    assert results["policy"].startswith("callable:") and "always_up" in results["policy"]
    assert results["episodes"] == 3 and results["ci_method"] == "wilson"
    assert len(results["success_ci95"]) == 2
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["policy"] == results["policy"]
    episodes = (tmp_path / "episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 3
    assert all(json.loads(line)["actions"] == ["up", "up"] for line in episodes)
    # the same function again resumes the same eval (its name is the config)
    again = evaluate(
        SOKOBAN, "seen", always_up, episodes=3, max_steps=2, out=tmp_path, progress=False, n_boot=10
    )
    assert again["resumed_episodes"] == 3


def test_unparseable_completions_are_flagged_like_a_models():
    results = evaluate(
        SOKOBAN, "seen", lambda obs: "no tags", episodes=2, max_steps=2, progress=False, n_boot=10
    )
    assert results["invalid_action_rate"] == 1.0
    assert results["success_rate"] == 0.0


def test_policy_object_is_used_as_is_and_left_open():
    class Oracle(OraclePolicy):
        closed = False

        def close(self) -> None:
            self.closed = True

    policy = Oracle()
    results = evaluate(SOKOBAN, "seen", policy, episodes=2, progress=False, n_boot=10)
    assert results["policy"] == "oracle"
    assert results["success_rate"] == 1.0
    assert not policy.closed  # the caller made it, the caller closes it


@pytest.mark.parametrize("bad", [42, None, ["oracle"], OraclePolicy])
def test_other_types_get_one_type_error_naming_what_is_accepted(bad):
    with pytest.raises(TypeError) as info:
        evaluate(SOKOBAN, "seen", bad, episodes=1, progress=False)
    message = str(info.value)
    assert "\n" not in message
    for accepted in ("policy spec (str", "Policy object", "function observation -> completion"):
        assert accepted in message


def test_a_function_that_returns_no_text_is_named():
    with pytest.raises(TypeError, match=r"callable:.*returned NoneType"):
        evaluate(SOKOBAN, "seen", lambda obs: None, episodes=1, progress=False, n_boot=10)
