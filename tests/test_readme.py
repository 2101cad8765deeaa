"""The README and the user guide say what the program does: their code runs, their links hold.

Fences, in README.md and docs/*.md:

- ```` ```python ```` runs, each page's blocks in order in one namespace (as a reader types
  them), from a folder holding a copy of `examples/`;
- ```` ```python needs-endpoint ```` talks to a model server: skipped, saying so;
- ```` ```python plan-lines ```` is a plan written in lines (`--plan-syntax lines`): read
  into a step graph and validated, never executed;
- every `stepgraph COMMAND --flag` in a command block or an inline code span names a
  command and flags that `stepgraph COMMAND --help` lists.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT, invoke

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PYTHON_FLAGS = {"", "needs-endpoint", "plan-lines"}
COMMAND_LANGUAGES = {"bash", "sh", "console", "text", ""}
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    flags: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a page, with the line each starts on."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        language, _, flags = match.group(1).strip().partition(" ")
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, language, flags.strip(), match.group(2)))
    return found


PYTHON = [block for page in PAGES for block in blocks(page) if block.language == "python"]
RUNNABLE_PAGES = sorted({block.page for block in PYTHON if not block.flags})


def test_every_python_fence_says_how_it_is_checked():
    """A misspelt marker would skip a block silently; only the known ones exist."""
    unknown = [f"{b.name}: {b.flags!r}" for b in PYTHON if b.flags not in PYTHON_FLAGS]
    assert not unknown, unknown


@pytest.fixture
def reader_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where a reader runs the snippets: the examples beside them, runs/ written here."""
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns("*.db"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_the_python_blocks_of_a_page_run(page: Path, reader_folder: Path):
    """Each page's Python runs as written, block after block, without a model."""
    namespace: dict[str, object] = {"__name__": "__readme__"}
    for block in blocks(page):
        if block.language == "python" and not block.flags:
            code = compile(block.text, block.name, "exec")
            exec(code, namespace)  # the page's own code, the point of the test


NEEDS_ENDPOINT = [block for block in PYTHON if block.flags == "needs-endpoint"]


@pytest.mark.parametrize("block", NEEDS_ENDPOINT, ids=lambda block: block.name)
def test_blocks_that_need_a_model_server_compile_and_are_skipped(block: Block):
    """They are not run offline, but they are Python; the skip names them."""
    compile(block.text, block.name, "exec")
    pytest.skip(f"{block.name} needs a model endpoint (fenced `python needs-endpoint`)")


@pytest.mark.parametrize(
    "block", [b for b in PYTHON if b.flags == "plan-lines"], ids=lambda block: block.name
)
def test_plans_in_lines_are_valid_plans(block: Block):
    """A plan shown in lines is one the planner would accept for the canonical inputs."""
    from stepgraph import StepGraph, Task
    from stepgraph.executor import validate_plan
    from stepgraph.planner._lines import read_lines
    from stepgraph.task import resolve_inputs
    from stepgraph.tools import default_registry

    inputs = {"data": "2.5 TB", "link": "450 Mbps", "duration": "6 h"}
    inputs |= {"utilisation": 0.9, "lost": 0.12}
    plan = StepGraph.model_validate(read_lines(block.text, inputs, ["calculate"]))
    task = Task(name="lines", goal="nights", inputs=inputs, plan=plan)
    graph = validate_plan(plan, default_registry(), inputs=resolve_inputs(task, None))
    assert "nights" in graph and plan.checks and plan.answer


def test_the_readme_task_file_is_the_example_it_runs():
    """The README shows `examples/migration.yaml` itself, not a copy that drifts."""
    shown = [b.text for b in blocks(ROOT / "README.md") if b.language == "yaml"]
    assert (EXAMPLES / "migration.yaml").read_text(encoding="utf-8") in shown


# --- the command line ------------------------------------------------------------------


@cache
def help_panel(*command: str) -> dict[str, set[str]]:
    """The options and subcommands `stepgraph COMMAND --help` lists."""
    output = invoke(*command, "--help", env={"COLUMNS": "240", "NO_COLOR": "1"}).output
    assert "Usage:" in output, output
    panels: dict[str, set[str]] = {"options": set(), "commands": set()}
    panel = None
    for line in output.splitlines():
        if heading := re.match(r"\s*╭─ (\w+)", line):
            panel = heading.group(1).lower()
            continue
        row = re.match(r"\s*│ (\S.*)", line)  # a row's first line; wrapped text is indented
        if row is None or panel not in panels:
            continue
        names = row.group(1).split("<")[0].split()  # the names, before the type
        if panel == "options":
            panels["options"].update(name for name in names if name.startswith("-"))
        else:
            panels["commands"].add(names[0])
    return panels


# `stepgraph` where a shell runs it: first on the line (after variables, a path, `$ `, `&&`),
# not as another program's argument (`npx ... stepgraph mcp`) or in Python (`from stepgraph`).
COMMAND = re.compile(
    r"(?:^\s*|&&\s*|^\s*\$\s+)(?:[A-Z_]+=\S*\s+)*(?:\S*/)?stepgraph((?: [a-z][\w-]*)?)(.*)"
)


@dataclass(frozen=True)
class Usage:
    where: str
    command: str
    words: tuple[str, ...]


def usages(page: Path) -> list[Usage]:
    """Each `stepgraph ...` the page shows: command blocks line by line, inline code spans."""
    text = page.read_text(encoding="utf-8")
    found: list[Usage] = []
    for block in blocks(page):
        if block.language not in COMMAND_LANGUAGES:
            continue
        current: Usage | None = None
        for offset, line in enumerate(block.text.splitlines(), start=1):
            where = f"{block.name}+{offset}"
            if (match := COMMAND.search(line)) and not line.lstrip().startswith("#"):
                words = _words(match.group(2), shell=block.language != "text")
                current = Usage(where, match.group(1).strip(), words)
                found.append(current)
            elif current is not None and line.startswith(" ") and line.strip()[:1] in "-[":
                words = _words(line.strip(), shell=block.language != "text")
                found.append(Usage(where, current.command, words))  # continued
            else:
                current = None
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for span in re.finditer(r"`(stepgraph [^`]+)`", prose):
        match = COMMAND.search(span.group(1))
        assert match is not None
        line = prose.count("\n", 0, span.start()) + 1
        where = f"{page.relative_to(ROOT)}:{line}"
        found.append(Usage(where, match.group(1).strip(), _words(match.group(2))))
    return found


def _words(rest: str, *, shell: bool = True) -> tuple[str, ...]:
    """The words of one command: up to a comment, a redirection, `&&` or (in a shell) a pipe.

    In a synopsis (a `text` block) `a | b` means one or the other, and a wide gap
    starts the description.
    """
    pipe = r"|\s\|\s" if shell else ""
    rest = re.split(r"\s#|\|\||&&|[;<>]|\$\(|\s\s\s" + pipe, rest)[0]
    return tuple(rest.split())


def _flags(usage: Usage) -> set[str]:
    """The options a usage names: `--flag`, `--flag=value`, `[--flag]`, `-s`."""
    flags = set()
    for word in usage.words:
        for part in word.split("|"):
            part = part.strip("[]().,'\"`")
            if re.fullmatch(r"--?[a-z][\w-]*[a-z](=.*)?", part):
                flags.add(part.split("=")[0])
    return flags


USAGES = [usage for page in PAGES for usage in usages(page)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_command_and_flag_a_page_shows_exists(page: Path):
    """A reader who types what a page shows gets no 'No such option'."""
    commands = help_panel()["commands"]
    wrong = []
    for usage in (u for u in USAGES if u.where.startswith(str(page.relative_to(ROOT)))):
        if not usage.command:
            wrong += [f"{usage.where}: {flag}" for flag in _flags(usage) - {"--help", "--version"}]
            continue
        if usage.command not in commands:
            wrong.append(f"{usage.where}: no command {usage.command!r}")
            continue
        command = (usage.command,)
        if help_panel(*command)["commands"] and usage.words:  # a group: `memory list|show`
            named = [word for word in usage.words[0].split("|") if word.isidentifier()]
            unknown = set(named) - help_panel(*command)["commands"]
            wrong += [f"{usage.where}: {usage.command} has no {word!r}" for word in unknown]
            if named and not unknown:  # a flag shown after `list|show` is one of each
                for sub in named:
                    missing = _flags(usage) - help_panel(usage.command, sub)["options"]
                    wrong += [f"{usage.where}: {usage.command} {sub} has no {f}" for f in missing]
                continue
        missing = _flags(usage) - help_panel(*command)["options"]
        wrong += [f"{usage.where}: {usage.command} has no {flag}" for flag in sorted(missing)]
    assert not wrong, "\n".join(wrong)


def test_the_readme_shows_every_command_at_a_glance():
    """A command `stepgraph --help` lists is in the README's command-line block."""
    glance = [b for b in blocks(ROOT / "README.md") if b.language == "text"]
    assert len(glance) == 1
    shown = {u.command for u in USAGES if u.where.startswith(glance[0].name)}
    assert help_panel()["commands"] <= shown, help_panel()["commands"] - shown


def test_the_readme_shows_the_flags_a_user_asks_for():
    """The options the issue found missing from the README stay in it."""
    shown = {flag for u in USAGES if u.where.startswith("README.md") for flag in _flags(u)}
    wanted = {"--approve", "--stream", "--backend", "--max-cost", "--max-tool-calls"}
    assert wanted <= shown, wanted - shown
    assert any(u.words[:1] == ("RUN_ID",) for u in USAGES if u.command == "approve")


# --- links -----------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    heading = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", prose, re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_local_link_of_a_page_resolves(page: Path):
    """Each link to a file of the repository names one that exists, and its heading."""
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, broken


def test_the_readme_links_a_guide_page_for_every_face():
    """One page per face, linked from the README."""
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", (ROOT / "README.md").read_text()))
    faces = {
        "task-files.md",
        "planning.md",
        "approval.md",
        "serve.md",
        "replay-resume.md",
        "plan-memory.md",
        "mcp.md",
        "telemetry-budgets.md",
        "dask.md",
        "evaluation.md",
        "performance.md",
    }
    assert faces <= linked, faces - linked


def test_the_command_line_guide_shows_every_option_of_every_command():
    """docs/cli.md is the reference: an option a command has is written there."""
    shown: dict[str, set[str]] = {}
    for usage in (u for u in USAGES if u.where.startswith("docs/cli.md")):
        sub = usage.words[0] if usage.command == "memory" and usage.words else ""
        shown.setdefault(f"{usage.command} {sub}".strip(), set()).update(_flags(usage))
    missing = []
    for command in help_panel()["commands"]:
        subs = sorted(help_panel(command)["commands"]) or [""]
        for sub in subs:
            name = f"{command} {sub}".strip()
            options = {o for o in help_panel(*name.split())["options"] if o.startswith("--")}
            options -= {"--help"}  # short aliases (-s) stand beside their long names
            # an option shown as --no-x covers --x, and the reverse
            seen = shown.get(name, set())
            seen |= {f"--{f[5:]}" for f in seen if f.startswith("--no-")}
            seen |= {f"--no-{f[2:]}" for f in seen}
            missing += [f"{name} {option}" for option in sorted(options - seen)]
    assert not missing, missing
