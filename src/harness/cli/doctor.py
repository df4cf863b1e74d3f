"""``harness doctor``: the configuration, the daemon (when it answers), the shared upstreams, each
harness's wiring, the endpoints and the store. Each finding is ``ok``, a ``note`` or a ``problem``;
any problem makes the exit code 1. Works with the daemon stopped."""

from __future__ import annotations

import http.client
import json
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.cli.common import CliError, Globals, control_request
from harness.cli.config_lines import key_line
from harness.cli.doctor_wiring import Status, wiring
from harness.cli.executables import upstream_commands
from harness.config import (
    Config,
    ConfigError,
    UpstreamConfig,
    default_config_path,
    load_config,
)
from harness.config.approvals import read_approvals, unapproved_files, unapproved_hint
from harness.config.model import loopback_address
from harness.gateway.state_dir import MAX_SOCKET_PATH, StatePaths

SECTIONS = ("configuration", "daemon", "shared upstreams", "harnesses", "endpoints", "store")


@dataclass(frozen=True)
class Finding:
    """One line of the report."""

    section: str
    status: Status
    text: str


@dataclass
class Report:
    """Everything ``doctor`` found, in order."""

    findings: list[Finding] = field(default_factory=list)
    shared_upstreams: list[dict[str, Any]] = field(default_factory=list)
    store: dict[str, Any] = field(default_factory=dict)
    daemon: dict[str, Any] | None = None

    def add(self, section: str, status: Status, text: str) -> None:
        """Record one finding."""
        self.findings.append(Finding(section, status, text))

    @property
    def problems(self) -> list[str]:
        """The problems' texts."""
        return [f.text for f in self.findings if f.status == "problem"]


def run_doctor(g: Globals, *, as_json: bool) -> int:
    """Check everything, print the report; 0 when nothing is wrong, else 1."""
    report = examine(g)
    if as_json:
        out = {"ok": not report.problems, "problems": report.problems, **asdict(report)}
        print(json.dumps(out, ensure_ascii=False))
    else:
        print_report(report)
    return 1 if report.problems else 0


def examine(g: Globals) -> Report:
    """The report for the configuration ``g`` names and the state dir ``g`` names."""
    report = Report()
    config = _configuration(report, g.config)
    if config is not None:
        _approvals(report, g.paths.root, config)
    report.daemon = _daemon(report, g.paths, config)
    if config is not None:
        _shared(report, config)
        _harnesses(report, config)
        _libraries(report, config)
    _endpoints(report, g.paths, config, running=report.daemon is not None)
    _store(report, g.paths, config)
    return report


def _configuration(report: Report, path: Path | None) -> Config | None:
    try:
        config = load_config(path)
    except ConfigError as exc:
        hints = [] if (line := key_line(Path(exc.file), exc.key)) is None else [f"line {line}"]
        report.add("configuration", "problem", str(exc) + (f" ({'; '.join(hints)})" if hints else ""))
        return None
    if not config.files:
        report.add("configuration", "problem", f"no configuration file (looked for {default_config_path()})")
        return None
    counts = (len(config.upstreams), len(config.policies), len(config.harnesses))
    files = ", ".join(map(str, config.files))
    report.add("configuration", "ok", "{}: {} upstreams, {} policies, {} harnesses".format(files, *counts))
    return config


def _approvals(report: Report, state_dir: Path, config: Config) -> None:
    """Project files the daemon will not run until the operator approves them as they are now."""
    try:
        approvals = read_approvals(state_dir)
    except ConfigError as exc:
        report.add("configuration", "problem", str(exc))
        return
    for file in unapproved_files(config, approvals):
        report.add("configuration", "problem", unapproved_hint(file))


def _accepts(path: Path) -> str | None:
    """None when something accepts connections on the socket, else why not."""
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return f"the path is longer than {MAX_SOCKET_PATH} bytes"
    if not path.exists():
        return "no socket there"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5.0)
        try:
            sock.connect(str(path))
        except OSError as exc:
            return f"a stale socket ({exc.strerror or exc})"
    return None


def _daemon(report: Report, paths: StatePaths, config: Config | None) -> dict[str, Any] | None:
    why = _accepts(paths.socket)
    if why is not None:
        report.add("daemon", "note", f"not running ({paths.socket}: {why}); the other checks go on")
        return None
    try:
        status: dict[str, Any] = control_request(paths, "status", timeout=10.0)
    except CliError as exc:
        report.add("daemon", "problem", f"the daemon did not answer `status`: {exc}")
        return None
    report.add(
        "daemon",
        "ok",
        f"running: pid {status['pid']}, version {status['version']}, {status['sessions']} sessions",
    )
    upstreams: dict[str, dict[str, Any]] = status.get("upstreams", {})
    for name, u in upstreams.items():
        for note in u.get("catalogue_notes", ()):
            report.add("daemon", "note", f"upstream {name}: {note}")
        instances: dict[str, dict[str, Any]] = u.get("instances", {})
        if u["state"] == "unshared":  # shared = false: its running instances say how it is
            down = sorted(h for h, i in instances.items() if i["state"] != "up" or i["breaker"] != "closed")
            text = f"upstream {name}: unshared, {len(instances)} instances running, {u['tools']} tools"
            if down:
                report.add("daemon", "problem", f"{text}; not up or breaker open for {', '.join(down)}")
            else:
                report.add("daemon", "ok", text)
            continue
        text = f"upstream {name}: {u['state']}, breaker {u['breaker']}, {u['tools']} tools"
        if u["state"] != "up" or u["breaker"] != "closed":
            report.add("daemon", "problem", f"{text} (`harness logs {name}` shows its stderr)")
        else:
            report.add("daemon", "ok", text)
    if config is not None and set(upstreams) != set(config.upstreams):
        report.add(
            "daemon",
            "problem",
            "the daemon's upstreams differ from the configuration's "
            f"({', '.join(sorted(upstreams)) or 'none'} vs {', '.join(sorted(config.upstreams)) or 'none'}): "
            "`harness reload` applies the file",
        )
    for name, state in status.get("harnesses", {}).items():
        report.add("daemon", "ok" if state == "running" else "note", f"harness {name}: {state}")
    if "call_log" in status:
        from harness.actors.log_stall import describe

        call_log = status["call_log"]
        healthy = call_log["state"] == "writing" and not call_log["dropped"]
        report.add("daemon", "ok" if healthy else "problem", f"call log: {describe(call_log)}")
    return status


def _shared(report: Report, config: Config) -> None:
    for key, upstream in config.upstreams.items():
        reached = [h for h in config.harnesses if _reaches(config, h, upstream)]
        who = ", ".join(reached) if reached else "no harness's policy reaches it"
        where = f" (project {upstream.project})" if upstream.project is not None else ""
        if not upstream.shared:
            text = f"{key}{where}: shared = false, one instance per harness: {who}"
            report.add("shared upstreams", "note", text)
            continue
        report.shared_upstreams.append(
            {
                "upstream": key,
                "project": str(upstream.project) if upstream.project else None,
                "reached_by": reached,
            }
        )
        scope = "every caller of its project" if upstream.project is not None else "every caller"
        report.add(
            "shared upstreams", "note", f"{key}{where}: shared = true, one instance for {scope}: {who}"
        )
    if not config.upstreams:
        report.add("shared upstreams", "note", "no upstreams configured")
    for status, text in upstream_commands(config):
        report.add("shared upstreams", status, text)


def _reaches(config: Config, harness: str, upstream: UpstreamConfig) -> bool:
    """Whether the harness's policy exposes the upstream (by NAME, in the harness's project)."""
    policy = config.policy_for(harness)
    return (
        policy is not None
        and upstream.name in policy.servers
        and config.upstream_for(upstream.name, config.project_of(harness)) == upstream
    )


def _harnesses(report: Report, config: Config) -> None:
    if not config.harnesses:
        report.add("harnesses", "note", "no harnesses configured")
    for name, harness in config.harnesses.items():
        for status, text in wiring(config, harness):
            report.add("harnesses", status, f"{name}: {text}")


def _libraries(report: Report, config: Config) -> None:
    """What ``skill_paths`` and ``prompt_paths`` serve; each file left out is a problem."""
    from harness.gateway.facade import read_libraries

    if not (config.mcp.skill_paths or config.mcp.prompt_paths):
        return
    skills, prompts = read_libraries(config)
    try:
        for kind, count, problems in (
            ("skills", len(skills.skills), skills.problems),
            ("prompts", len(prompts.prompts), prompts.problems),
        ):
            report.add("configuration", "ok", f"{kind}: {count} served")
            for problem in problems:
                report.add("configuration", "problem", f"{kind}: left out: {problem}")
    finally:
        skills.close()


def _endpoints(report: Report, paths: StatePaths, config: Config | None, *, running: bool) -> None:
    why = _accepts(paths.socket)
    if why is None:
        report.add("endpoints", "ok", f"control socket {paths.socket} accepts connections")
    elif len(os.fsencode(paths.socket)) > MAX_SOCKET_PATH:
        report.add("endpoints", "problem", f"control socket {paths.socket}: {why}: use a shorter --state-dir")
    else:
        report.add("endpoints", "note", f"control socket {paths.socket}: {why}")
    if config is None:
        return
    listen = config.mcp.metrics_listen
    if not listen:
        report.add("endpoints", "note", "[mcp] metrics_listen: off")
    elif not running:
        report.add(
            "endpoints", "note", f"[mcp] metrics_listen {listen}: not checked (the daemon is not running)"
        )
    else:
        try:
            with socket.create_connection(loopback_address(listen), timeout=5.0):
                pass
        except OSError as exc:
            report.add("endpoints", "problem", f"[mcp] metrics_listen {listen}: {exc.strerror or exc}")
        else:
            report.add("endpoints", "ok", f"[mcp] metrics_listen {listen}: accepts (/metrics)")
    _http_endpoint(report, config.mcp.listen, running=running)


def _http_endpoint(report: Report, listen: str, *, running: bool) -> None:
    """``[mcp] listen``: a POST /mcp without a token must be answered 401."""
    if not listen:
        report.add("endpoints", "note", "[mcp] listen (Streamable HTTP): off")
        return
    if not running:
        report.add("endpoints", "note", f"[mcp] listen {listen}: not checked (the daemon is not running)")
        return
    host, port = loopback_address(listen)
    conn = http.client.HTTPConnection(host, port, timeout=5.0)
    try:
        conn.request("POST", "/mcp", b"{}", {"Host": f"{host}:{port}", "Content-Type": "application/json"})
        status = conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        report.add("endpoints", "problem", f"[mcp] listen {listen}: {getattr(exc, 'strerror', None) or exc}")
        return
    finally:
        conn.close()
    if status == 401:
        report.add("endpoints", "ok", f"[mcp] listen {listen}: answers (POST /mcp without a token: 401)")
    else:
        report.add(
            "endpoints", "problem", f"[mcp] listen {listen}: POST /mcp without a token got {status}, not 401"
        )


def _store(report: Report, paths: StatePaths, config: Config | None) -> None:
    import apsw

    from harness.projections import iso_ms
    from harness.reading import open_store
    from harness.store import StoreError
    from harness.store.schema import unreadable

    days = config.mcp.call_log_days if config is not None else None
    report.store = {"path": str(paths.db), "call_log_days": days}
    if not paths.db.exists():
        report.add("store", "note", f"{paths.db}: no store yet (the daemon creates it)")
        return
    wal = paths.db.with_name(paths.db.name + "-wal")
    sizes = {"db_bytes": paths.db.stat().st_size, "wal_bytes": wal.stat().st_size if wal.exists() else 0}
    try:
        with open_store(paths.db) as view:
            oldest, events = view.conn.execute("SELECT min(ts), count(*) FROM events").get
            calls = view.conn.execute("SELECT count(*) FROM call_log").get
            gaps, lost = view.conn.execute(
                "SELECT count(*), coalesce(sum(data ->> 'events'), 0) FROM events WHERE name = 'log.gap'"
            ).get
    except apsw.Error as exc:  # damaged past what opening it reads
        report.add("store", "problem", str(unreadable(paths.db, exc)))
        return
    except (StoreError, OSError) as exc:
        report.add("store", "problem", str(exc))
        return
    report.store |= {
        **sizes,
        "events": events,
        "calls": calls,
        "oldest_event": iso_ms(oldest) if oldest else None,
    }
    size = sizes["db_bytes"] + sizes["wal_bytes"]
    kept = f"call_log_days = {days}" if days is not None else "call_log_days unknown (no configuration)"
    since = f", oldest event {report.store['oldest_event']}" if oldest else ""
    report.add(
        "store",
        "ok",
        f"{paths.db}: {size:,} bytes with -wal, {events:,} events, {calls:,} calls{since}; {kept}",
    )
    if gaps:
        report.add(
            "store",
            "problem",
            f"the log lacks {lost:,} events the daemon dropped (its intake was full), in {gaps} log.gap "
            "events that say which and when (docs/dataset.md, Durability)",
        )


def print_report(report: Report) -> None:
    """Findings by section, then the problems (or that there are none)."""
    for section in SECTIONS:
        findings = [f for f in report.findings if f.section == section]
        if findings:
            print(section)
            for f in findings:
                print(f"  {f.status:<8} {f.text}")
    problems = report.problems
    print()
    if not problems:
        print("no problems found")
        return
    print(f"{len(problems)} problem{'s' if len(problems) != 1 else ''}:")
    for text in problems:
        print(f"  - {text}")


def print_wiring(*, as_json: bool) -> int:
    """The daemon's bus wiring, as declared in :mod:`harness.gateway.wiring` (no daemon needed)."""
    from harness.gateway.wiring import wiring_lines, wiring_table

    if as_json:
        print(json.dumps(wiring_table(), ensure_ascii=False))
    else:
        print("\n".join(wiring_lines()))
    return 0
