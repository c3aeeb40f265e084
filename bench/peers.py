"""Peer workloads for bench/durable-cycle: the same durable tool-call cycle, in other runtimes.

Run inside the benchmark's virtualenv (bench/durable-cycle does that):

    python bench/peers.py --data-dir DIR --cycles N --runs R [--long L] [--peers a,b]

Each peer runs a thread of N scripted model turns, each turn one call of a trivial tool, then a
final text, with its state persisted to a SQLite file in DIR. The tool stamps the time it runs,
so one cycle (model step + tool step, and whatever the peer persists in between) is the time from
one run of the tool to the next, exactly as the toolhost bench measures it. The whole run divided
by N is reported too. With --long L, one more thread of L cycles compares the median cycle of
cycles 10-30 with that of the last 21 cycles. Prints one JSON object on stdout; progress goes to
stderr.

Peers:
  langgraph-default      create_react_agent + SqliteSaver, as they come (durability "async").
  langgraph-full         the same with PRAGMA synchronous=FULL set explicitly and
                         durability="sync": each checkpoint is written before the next step.
  langgraph-memory       the same agent on InMemorySaver (LangGraph's in-memory
                         checkpointer), as it comes (durability "async").
  openai-agents-session  Agents SDK Runner with a scripted Model and a SQLiteSession.
  openai-agents-memory   the same without a session: nothing is persisted.

With --throughput THREADS it measures throughput instead (bench/durable-cycle --throughput): one
thread alone, then THREADS threads at once as tasks of one event loop, N cycles each, R runs, and
prints cycles per second, commits per cycle and the tool-to-tool time of each. Peers:
  langgraph-async-full     create_react_agent with a scripted async model and an async tool on
                           AsyncSqliteSaver (aiosqlite, one connection), PRAGMA synchronous=FULL,
                           durability="sync".
  langgraph-async-default  the same as it comes (the connection's synchronous, durability
                           "async").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sqlite3
import sys
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable

warnings.filterwarnings("ignore")

WARMUP = 20


def say(text: str) -> None:
    print(f"[peers] {text}", file=sys.stderr, flush=True)


def pct(samples: list[float], p: float) -> float:
    """Nearest-rank percentile (the same rule as the toolhost bench)."""
    if not samples:
        return math.nan
    v = sorted(samples)
    rank = min(max(math.ceil(p * len(v)), 1), len(v))
    return v[rank - 1]


def remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.remove(f"{path}{suffix}")
        except FileNotFoundError:
            pass


SYNC_NAMES = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def pragmas(conn: sqlite3.Connection) -> dict[str, str]:
    """The durability settings a connection really runs with."""
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    return {"journal_mode": str(mode).upper(), "synchronous": SYNC_NAMES.get(sync, str(sync))}


class Thread:
    """What one thread of a peer left behind."""

    def __init__(self, stamps: list[float], whole_s: float, commits: int | None = None,
                 checkpoints: int | None = None) -> None:
        self.stamps = stamps
        self.whole_s = whole_s
        self.commits = commits
        self.checkpoints = checkpoints

    def cycles_us(self) -> list[float]:
        return [(b - a) * 1e6 for a, b in zip(self.stamps, self.stamps[1:])]


# A peer: (run one thread of n cycles in a database file) and what it persists with.
Peer = tuple[Callable[[int, Path], Thread], dict[str, Any]]


# -------------------------------------------------------------------------------------------------
# Peer 1: LangGraph create_react_agent + SqliteSaver


def langgraph_peer(full: bool, memory: bool = False) -> Peer:
    """LangGraph's ReAct agent on SqliteSaver (as it comes, or with FULL + sync), or with
    `memory` on its in-memory checkpointer (InMemorySaver, LangGraph's default durability)."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.prebuilt import create_react_agent

    class ScriptedChatModel(BaseChatModel):
        """Answers `calls` turns of one `count` tool call each, then a final text."""

        calls: int
        made: int = 0

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            if self.made < self.calls:
                self.made += 1
                call = {"name": "count", "args": {"n": 1}, "id": f"call_{self.made}",
                        "type": "tool_call"}
                msg = AIMessage(content="", tool_calls=[call])
            else:
                msg = AIMessage(content="Done counting.")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    stamps: list[float] = []

    @tool
    def count(n: int) -> str:
        """Counts."""
        stamps.append(time.perf_counter())
        return f"counted {n}"

    info: dict[str, Any] = {
        "persists": "InMemorySaver checkpoints (in memory)" if memory
        else "SqliteSaver checkpoints",
        "durability": "sync (checkpoint written before the next step)" if full
        else "async (LangGraph's default: checkpoint written while the next step runs)"
        + (", in memory" if memory else ""),
    }

    def memory_thread(n: int) -> Thread:
        saver = InMemorySaver()
        info["sqlite"] = None
        agent = create_react_agent(ScriptedChatModel(calls=n), [count], checkpointer=saver)
        config: dict[str, Any] = {"configurable": {"thread_id": uuid.uuid4().hex},
                                  "recursion_limit": 2 * n + 50}
        stamps.clear()
        started = time.perf_counter()
        out = agent.invoke({"messages": [("user", "count for me")]}, config)
        whole = time.perf_counter() - started
        if out["messages"][-1].content != "Done counting.":
            raise RuntimeError("langgraph: the thread did not end with the final text")
        checkpoints = len(list(saver.list(config)))
        return Thread(list(stamps), whole, None, checkpoints)

    def thread(n: int, db: Path) -> Thread:
        if memory:
            return memory_thread(n)
        conn = sqlite3.connect(str(db), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()  # the saver's own setup: it sets journal_mode=WAL
        if full:
            conn.execute("PRAGMA synchronous=FULL")
        info["sqlite"] = pragmas(conn)
        commits = [0]

        class CountingConnection:
            """The saver's connection, with its commits counted."""

            def __getattr__(self, name: str) -> Any:
                return getattr(conn, name)

            def commit(self) -> None:
                commits[0] += 1
                conn.commit()

        saver.conn = CountingConnection()  # type: ignore[assignment]
        agent = create_react_agent(ScriptedChatModel(calls=n), [count], checkpointer=saver)
        config: dict[str, Any] = {"configurable": {"thread_id": uuid.uuid4().hex},
                                  "recursion_limit": 2 * n + 50}
        extra: dict[str, Any] = {"durability": "sync"} if full else {}
        stamps.clear()
        started = time.perf_counter()
        out = agent.invoke({"messages": [("user", "count for me")]}, config, **extra)
        whole = time.perf_counter() - started
        if out["messages"][-1].content != "Done counting.":
            raise RuntimeError("langgraph: the thread did not end with the final text")
        checkpoints = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        conn.close()
        return Thread(list(stamps), whole, commits[0], checkpoints)

    return thread, info


# -------------------------------------------------------------------------------------------------
# Peer 2: OpenAI Agents SDK with a scripted Model (and a SQLiteSession)


def openai_agents_peer(with_session: bool) -> Peer:
    from agents import Agent, ModelResponse, RunConfig, Runner, function_tool
    from agents import set_tracing_disabled
    from agents.memory import SQLiteSession
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)

    class ScriptedModel(Model):
        """Answers `calls` turns of one `count` tool call each, then a final text."""

        def __init__(self, calls: int) -> None:
            self.calls = calls
            self.made = 0

        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any,
                               tools: Any, output_schema: Any, handoffs: Any, tracing: Any,
                               **kwargs: Any) -> ModelResponse:
            if self.made < self.calls:
                self.made += 1
                item: Any = ResponseFunctionToolCall(
                    type="function_call", name="count", arguments='{"n": 1}',
                    call_id=f"call_{self.made}", id=f"fc_{self.made}", status="completed")
            else:
                text = ResponseOutputText(type="output_text", text="Done counting.",
                                          annotations=[])
                item = ResponseOutputMessage(type="message", id="msg_final", role="assistant",
                                             status="completed", content=[text])
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    stamps: list[float] = []

    @function_tool
    def count(n: int) -> str:
        """Counts."""
        stamps.append(time.perf_counter())
        return f"counted {n}"

    info: dict[str, Any] = {
        "persists": "SQLiteSession items" if with_session else "nothing (in memory)",
        "durability": "one add_items commit per turn, after the tool ran (call and output "
                      "together)" if with_session else "none",
        "sqlite": None,
    }

    def thread(n: int, db: Path) -> Thread:
        writes = [0]
        session = None
        if with_session:
            class CountingSession(SQLiteSession):
                async def add_items(self, items: Any) -> None:
                    writes[0] += 1
                    await super().add_items(items)

            session = CountingSession(uuid.uuid4().hex, db)

            def settings() -> dict[str, str]:
                # The session writes from worker threads, each with its own connection.
                with session._locked_connection() as conn:
                    return pragmas(conn)

        agent = Agent(name="counter", instructions="You count.", model=ScriptedModel(n),
                      tools=[count])

        async def go() -> tuple[Any, float, dict[str, str] | None]:
            started = time.perf_counter()
            result = await Runner.run(agent, "count for me", session=session,
                                      max_turns=2 * n + 50,
                                      run_config=RunConfig(tracing_disabled=True))
            whole = time.perf_counter() - started
            got = await asyncio.to_thread(settings) if session is not None else None
            return result, whole, got

        stamps.clear()
        result, whole, got = asyncio.run(go())
        if got is not None:
            info["sqlite"] = got
        if result.final_output != "Done counting.":
            raise RuntimeError("openai-agents: the run did not end with the final text")
        if session is not None:
            session.close()
        return Thread(list(stamps), whole, writes[0] if with_session else None)

    return thread, info


# -------------------------------------------------------------------------------------------------
# Throughput: many LangGraph threads at once on AsyncSqliteSaver


def langgraph_throughput(data: Path, threads: int, n: int, runs: int,
                         full: bool) -> dict[str, Any]:
    """One thread alone, then `threads` threads at once (asyncio tasks on one event loop, one
    agent, one AsyncSqliteSaver on one aiosqlite connection), `runs` times each. Cycles per
    second = tool runs of all threads / the time from the first start to the last end."""
    import aiosqlite
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.prebuilt import create_react_agent

    class ScriptedChatModel(BaseChatModel):
        """Answers `calls` turns of one `count` tool call each, then a final text. Stateless
        (it counts the replies so far, as toolhost's scripted model does), so one model serves
        every thread; async natively, so no call leaves the event loop."""

        calls: int

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
            return self

        def _reply(self, messages: Any) -> ChatResult:
            made = sum(1 for m in messages if isinstance(m, AIMessage))
            if made < self.calls:
                call = {"name": "count", "args": {"n": 1}, "id": f"call_{made + 1}",
                        "type": "tool_call"}
                msg = AIMessage(content="", tool_calls=[call])
            else:
                msg = AIMessage(content="Done counting.")
            return ChatResult(generations=[ChatGeneration(message=msg)])

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            return self._reply(messages)

        async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> ChatResult:
            return self._reply(messages)

    stamps: dict[str, list[float]] = {}

    async def count_fn(n: int, config: RunnableConfig) -> str:
        """Counts."""
        thread_id = config["configurable"]["thread_id"]
        stamps.setdefault(thread_id, []).append(time.perf_counter())
        return f"counted {n}"

    # LangChain injects the run's config into a parameter typed RunnableConfig; the types are
    # given as objects, since this module's annotations are strings it cannot resolve here.
    count_fn.__annotations__ = {"n": int, "config": RunnableConfig, "return": str}
    count = tool("count")(count_fn)

    info: dict[str, Any] = {
        "persists": "AsyncSqliteSaver checkpoints (aiosqlite, one connection)",
        "durability": "sync (checkpoint written before the next step)" if full
        else "async (LangGraph's default: checkpoint written while the next step runs)",
    }

    async def phase(agent: Any, count_commits: list[int], k: int) -> dict[str, Any]:
        ids = [uuid.uuid4().hex for _ in range(k)]
        extra: dict[str, Any] = {"durability": "sync"} if full else {}
        stamps.clear()
        before = count_commits[0]

        async def one(thread_id: str) -> None:
            config = {"configurable": {"thread_id": thread_id}, "recursion_limit": 2 * n + 50}
            out = await agent.ainvoke({"messages": [("user", "count for me")]}, config, **extra)
            if out["messages"][-1].content != "Done counting.":
                raise RuntimeError("langgraph: a thread did not end with the final text")

        started = time.perf_counter()
        await asyncio.gather(*(one(t) for t in ids))
        took = time.perf_counter() - started
        if len(stamps) != k or any(len(v) != n for v in stamps.values()):
            raise RuntimeError("langgraph: not every thread ran its tool n times")
        cycles = [(b - a) * 1e6 for v in stamps.values() for a, b in zip(v, v[1:])]
        return {"cycles_per_s": k * n / took,
                "commits_per_cycle": (count_commits[0] - before) / (k * n),
                "cycle_us": cycles}

    async def run(r: int) -> tuple[dict[str, Any], dict[str, Any]]:
        db = data / f"langgraph-throughput-{r}.sqlite"
        remove_db(db)
        try:
            async with aiosqlite.connect(str(db)) as conn:
                saver = AsyncSqliteSaver(conn)
                await saver.setup()  # the saver's own setup: it sets journal_mode=WAL
                if full:
                    await conn.execute("PRAGMA synchronous=FULL")
                mode = (await (await conn.execute("PRAGMA journal_mode")).fetchone())[0]
                sync = (await (await conn.execute("PRAGMA synchronous")).fetchone())[0]
                info["sqlite"] = {"journal_mode": str(mode).upper(),
                                  "synchronous": SYNC_NAMES.get(sync, str(sync))}
                commits = [0]

                class CountingConnection:
                    """The saver's connection, with its commits counted."""

                    def __getattr__(self, name: str) -> Any:
                        return getattr(conn, name)

                    async def commit(self) -> None:
                        commits[0] += 1
                        await conn.commit()

                saver.conn = CountingConnection()  # type: ignore[assignment]
                agent = create_react_agent(ScriptedChatModel(calls=n), [count],
                                           checkpointer=saver)
                if r == 0:
                    await phase(agent, commits, 1)  # warm-up
                alone = await phase(agent, commits, 1)
                many = await phase(agent, commits, threads)
                return alone, many
        finally:
            remove_db(db)

    alone: list[dict[str, Any]] = []
    many: list[dict[str, Any]] = []
    for r in range(runs):
        a, m = asyncio.run(run(r))
        alone.append(a)
        many.append(m)
        say(f"throughput run {r + 1}/{runs}: 1 thread {a['cycles_per_s']:.0f} cycles/s, "
            f"{threads} threads {m['cycles_per_s']:.0f} cycles/s")

    def summary(phases: list[dict[str, Any]], k: int) -> dict[str, Any]:
        rates = [p["cycles_per_s"] for p in phases]
        cycles = [c for p in phases for c in p["cycle_us"]]
        return {"threads": k,
                "cycles_per_s": round(pct(rates, 0.5), 1),
                "cycles_per_s_per_run": [round(x, 1) for x in rates],
                "commits_per_cycle": round(pct([p["commits_per_cycle"] for p in phases], 0.5),
                                           3),
                "cycle_p50_us": round(pct(cycles, 0.5), 1),
                "cycle_p90_us": round(pct(cycles, 0.9), 1)}

    one, lots = summary(alone, 1), summary(many, threads)
    return {"one": one, "many": lots,
            "many_over_one": round(lots["cycles_per_s"] / one["cycles_per_s"], 3),
            "thread_cycles": n, "runs": runs} | info


THROUGHPUT: dict[str, Callable[[Path, int, int, int], dict[str, Any]]] = {
    "langgraph-async-full": lambda d, t, n, r: langgraph_throughput(d, t, n, r, full=True),
    "langgraph-async-default": lambda d, t, n, r: langgraph_throughput(d, t, n, r, full=False),
}


PEERS: dict[str, Callable[[], Peer]] = {
    "langgraph-default": lambda: langgraph_peer(full=False),
    "langgraph-full": lambda: langgraph_peer(full=True),
    "langgraph-memory": lambda: langgraph_peer(full=False, memory=True),
    "openai-agents-session": lambda: openai_agents_peer(with_session=True),
    "openai-agents-memory": lambda: openai_agents_peer(with_session=False),
}


def measure(name: str, data: Path, n: int, runs: int, long: int) -> dict[str, Any]:
    thread, info = PEERS[name]()

    def one(label: str, cycles: int) -> Thread:
        db = data / f"{name}-{label}.sqlite"
        remove_db(db)
        try:
            t = thread(cycles, db)
        finally:
            remove_db(db)
        if len(t.stamps) != cycles:
            raise RuntimeError(f"{name}: the tool ran {len(t.stamps)} times, not {cycles}")
        return t

    one("warmup", WARMUP)
    threads = [one(f"run{r}", n) for r in range(runs)]
    cycles = [c for t in threads for c in t.cycles_us()]
    whole = [t.whole_s * 1e6 / n for t in threads]
    out: dict[str, Any] = {
        "cycle_p50_us": round(pct(cycles, 0.5), 1),
        "cycle_p90_us": round(pct(cycles, 0.9), 1),
        "cycle_whole_run_us": round(pct(whole, 0.5), 1),
        "whole_run_per_cycle_us": [round(w, 1) for w in whole],
        "cycle_samples": len(cycles),
        "cycles": n,
        "runs": runs,
    }
    if threads[0].commits is not None:
        out["commits_per_cycle"] = round(pct([t.commits / n for t in threads], 0.5), 2)
    if threads[0].checkpoints is not None:
        out["checkpoints_per_cycle"] = round(pct([t.checkpoints / n for t in threads], 0.5), 2)
    if long >= 40:
        say(f"{name}: one thread of {long} cycles (early vs late step)")
        c = one("long", long).cycles_us()
        early, late = c[10:31], c[-21:]
        out["step_early_p50_us"] = round(pct(early, 0.5), 1)
        out["step_late_p50_us"] = round(pct(late, 0.5), 1)
        out["step_late_over_early"] = round(pct(late, 0.5) / pct(early, 0.5), 3)
        out["long_cycles"] = long
    out.update(info)
    return out


def versions() -> dict[str, str]:
    from importlib.metadata import version

    names = ["langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
             "langgraph-prebuilt", "langchain-core", "openai-agents", "openai", "pydantic",
             "aiosqlite"]
    return {name: version(name) for name in names} | {
        "python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version}


def throughput_main(args: argparse.Namespace) -> None:
    names = [p for p in (args.peers or "langgraph-async-full").split(",") if p]
    for name in names:
        if name not in THROUGHPUT:
            sys.exit(f"peers.py: unknown throughput peer {name!r} "
                     f"(known: {', '.join(THROUGHPUT)})")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"versions": versions(), "throughput": {}}
    for name in names:
        say(f"{name}: 1 thread, then {args.throughput} at once, {args.cycles} cycles each, "
            f"{args.runs} runs")
        out["throughput"][name] = THROUGHPUT[name](args.data_dir, args.throughput,
                                                   args.cycles, args.runs)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--long", type=int, default=0,
                    help="cycles of the early-vs-late thread (0: skip; at least 40)")
    ap.add_argument("--peers", default=None,
                    help=f"comma-separated, from: {', '.join(PEERS)} (with --throughput: "
                         f"{', '.join(THROUGHPUT)})")
    ap.add_argument("--throughput", type=int, default=0, metavar="THREADS",
                    help="run the throughput peers instead: one thread alone, then THREADS at "
                         "once, --cycles each, --runs times")
    args = ap.parse_args()
    if args.throughput:
        throughput_main(args)
        return
    if args.cycles < 3 or args.runs < 1:
        sys.exit("peers.py: --cycles must be at least 3 and --runs at least 1")
    names = [p for p in (args.peers or ",".join(PEERS)).split(",") if p]
    for name in names:
        if name not in PEERS:
            sys.exit(f"peers.py: unknown peer {name!r} (known: {', '.join(PEERS)})")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"versions": versions(), "peers": {}}
    for name in names:
        say(f"{name}: {args.runs} runs of {args.cycles} cycles (after a warm-up)")
        p = out["peers"][name] = measure(name, args.data_dir, args.cycles, args.runs, args.long)
        say(f"{name}: cycle p50 {p['cycle_p50_us']:.0f} us, "
            f"whole run / N {p['cycle_whole_run_us']:.0f} us")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
