"""README.md is built from docs/readme/ and its first screen stays true."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

ROOT = Path(__file__).resolve().parents[2]


def _build() -> str:
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "docs" / "build_readme.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.build())


def test_readme_is_up_to_date() -> None:
    assert (ROOT / "README.md").read_text(encoding="utf-8") == _build(), "run: python docs/build_readme.py"


def test_quick_start_has_exactly_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M)
    assert re.search(r"^test:", makefile, re.M)
    assert "test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.integration
def test_intro_example_runs_with_a_scripted_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    intro = (ROOT / "docs" / "readme" / "00_intro.md").read_text(encoding="utf-8")
    code = next(block for block in re.findall(r"```python\n(.*?)```", intro, re.S) if "Hindsight(" in block)
    assert '"openai:gpt-4o-mini"' in code
    code = code.replace('"openai:gpt-4o-mini"', "model")
    monkeypatch.chdir(tmp_path)
    model = GenericFakeChatModel(messages=iter([AIMessage("已清洗：删除重复行 3 条，日期统一为 YYYY-MM-DD。")]))
    namespace: dict[str, object] = {"model": model}
    exec(compile(code, "README intro", "exec"), namespace)
    hs = namespace["hs"]
    from langchain_hindsight import Hindsight, MemoryStore

    assert isinstance(hs, Hindsight)
    with MemoryStore(tmp_path / "memory_db", embeddings=hs.store.embeddings) as store:
        contents = [u.content for u in store.list_units(source="user_feedback")]
    assert any("去掉重复行" in c for c in contents)


def test_benchmark_numbers_are_copied_from_the_results_files() -> None:
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "docs" / "build_readme.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    section = (ROOT / "docs" / "readme" / "90_benchmarks.md").read_text(encoding="utf-8")
    markers = re.findall(r"^<!-- results: ([\w.-]+\.md)(?: # ([^>]+?))? -->$", section, re.M)
    assert len(markers) >= 8
    assert not re.search(r"\d+\.\d+ ?(?:ms|×|x)\b", section)  # no number typed by hand
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, heading in markers:
        table = module.results_table(name, heading or None)
        assert table.startswith("|")
        assert table in readme, name
