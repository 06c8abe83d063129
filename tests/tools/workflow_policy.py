"""Fails if the release workflow lets the signing key or the write token near third-party code.

    python tests/tools/workflow_policy.py .github/workflows/release.yml

The job that holds the signing key (any job naming a RELEASE_SIGNING_* secret) must be one
job, which only downloads the built artifacts and signs them; the token that can write the
repository must be in one other job, the one that publishes. Static checks of the workflow as
written; every failed check is listed, and the exit status is 1 if any.

Checks (see CHECKS at the end):
  one-signing-job          exactly one job names the signing secrets.
  signing-installs-nothing that job uses no action but checkout, download-artifact and
                           upload-artifact, runs in no container, beside no service and
                           calls no reusable workflow, and its run: scripts call no package
                           manager, downloader or build tool (pip, apt, npm, make, cargo,
                           curl...).
  signing-no-credentials   its checkout sets persist-credentials: false, and it can write
                           nothing (no write permission, no github.token or GITHUB_TOKEN).
  one-writing-job          the workflow's own permissions write nothing, and exactly one job
                           may write (permissions with `write`), which is the only one to use
                           github.token or GITHUB_TOKEN; it is not the signing job, names no
                           signing secret, checks nothing out and installs nothing.
"""

import re
import sys

import yaml

sys.dont_write_bytecode = True  # no __pycache__ next to the tools

SIGNING_SECRET = re.compile(r"secrets\.RELEASE_SIGNING_")
WRITE_TOKEN = re.compile(r"github\.token|secrets\.GITHUB_TOKEN")
SIGNING_ACTIONS = {"actions/checkout", "actions/download-artifact", "actions/upload-artifact"}
PUBLISHING_ACTIONS = {"actions/download-artifact"}
# Commands that install or fetch code, or build it (and so run a build's dependencies).
INSTALLERS = re.compile(
    r"(?<![\w./-])(pip3?|pipx|python3? -m pip|uv|apt|apt-get|dpkg|snap|brew|npm|npx|yarn|pnpm|gem"
    r"|go|cargo|rustup|make|curl|wget|docker|podman|sudo)(?![\w-])"
)


def dump(value):
    return yaml.safe_dump(value, default_flow_style=True, width=10**6)


def action(step):
    return step.get("uses", "").split("@")[0]


class Workflow:
    def __init__(self, path):
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        self.jobs = self.doc.get("jobs") or {}

    def signing_jobs(self):
        return [name for name, job in self.jobs.items() if SIGNING_SECRET.search(dump(job))]

    def writing_jobs(self):
        return [name for name, job in self.jobs.items() if "write" in dump(job.get("permissions", {}))]


def check_one_signing_job(w):
    jobs = w.signing_jobs()
    if len(jobs) != 1:
        return [f"{len(jobs)} jobs name the signing secrets ({', '.join(jobs) or 'none'}): there must be one"]
    return []


def installs(job):
    problems = []
    for i, step in enumerate(job.get("steps", [])):
        label = step.get("name") or step.get("uses") or f"step {i + 1}"
        if "uses" in step and action(step) not in SIGNING_ACTIONS:
            problems.append(f"step {label!r} uses {step['uses']}")
        for line in str(step.get("run", "")).splitlines():
            found = INSTALLERS.search(line.split("#")[0])
            if found:
                problems.append(f"step {label!r} runs {found.group(1)}: {line.strip()}")
    return problems


def check_signing_installs_nothing(w):
    problems = [f"{name}: {p}" for name in w.signing_jobs() for p in installs(w.jobs[name])]
    for name in w.signing_jobs():
        for key in ("container", "services", "uses"):
            if key in w.jobs[name]:
                problems.append(f"{name}: it runs in or beside other code ({key}: {dump(w.jobs[name][key]).strip()})")
    return problems


def check_signing_no_credentials(w):
    problems = []
    for name in w.signing_jobs():
        job = w.jobs[name]
        for step in job.get("steps", []):
            if action(step) == "actions/checkout" and (step.get("with") or {}).get("persist-credentials") is not False:
                problems.append(f"{name}: its checkout does not set persist-credentials: false")
        if "write" in dump(job.get("permissions", {})):
            problems.append(f"{name}: it may write ({dump(job['permissions']).strip()})")
        if "permissions" not in job and "write" in dump(w.doc.get("permissions", {})):
            problems.append(f"{name}: it inherits the workflow's write permissions")
        if WRITE_TOKEN.search(dump(job)):
            problems.append(f"{name}: it uses the repository token")
    return problems


def check_one_writing_job(w):
    problems = []
    top = w.doc.get("permissions")
    if top is None or "write" in dump(top):
        problems.append(f"the workflow's own permissions must be read-only, not {dump(top).strip()}")
    writers = w.writing_jobs()
    if len(writers) != 1:
        return problems + [f"{len(writers)} jobs may write ({', '.join(writers) or 'none'}): there must be one, the publishing job"]
    publisher = writers[0]
    for name, job in w.jobs.items():
        if name != publisher and WRITE_TOKEN.search(dump(job)):
            problems.append(f"{name}: it uses the repository token, which only {publisher} may")
    job = w.jobs[publisher]
    if publisher in w.signing_jobs():
        problems.append(f"{publisher}: it both signs and may write")
    for i, step in enumerate(job.get("steps", [])):
        label = step.get("name") or step.get("uses") or f"step {i + 1}"
        if "uses" in step and action(step) not in PUBLISHING_ACTIONS:
            problems.append(f"{publisher}: step {label!r} uses {step['uses']}")
        for line in str(step.get("run", "")).splitlines():
            found = INSTALLERS.search(line.split("#")[0])
            if found:
                problems.append(f"{publisher}: step {label!r} runs {found.group(1)}: {line.strip()}")
    return problems


CHECKS = [
    ("one-signing-job", "one job holds the signing key", check_one_signing_job),
    ("signing-installs-nothing", "the signing job only downloads, signs and uploads", check_signing_installs_nothing),
    ("signing-no-credentials", "the signing job keeps no git credentials and cannot write", check_signing_no_credentials),
    ("one-writing-job", "only the publishing job can write, and it runs nothing else", check_one_writing_job),
]


def main(path):
    workflow = Workflow(path)
    failed = 0
    for name, summary, check in CHECKS:
        problems = check(workflow)
        if problems:
            failed += 1
            print(f"FAIL {name}: {summary}")
            for problem in problems:
                print(f"     - {problem}")
        else:
            print(f"ok   {name}: {summary}")
    if failed:
        sys.exit(f"{path}: {failed} of {len(CHECKS)} policy checks failed")
    print(f"{path}: all {len(CHECKS)} policy checks pass")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".github/workflows/release.yml")
