"""Checks the container build and the Kubernetes manifests (run by scripts/check_deploy.sh in a
venv with dockerfile-parse, kubernetes-validate and PyYAML; Docker itself does not run here).

Dockerfile: multi-stage, every base image pinned to a tag (no implicit or explicit `latest`),
the final stage runs as a non-root user, every COPY source from the build context exists.
shards-job.yaml: an Indexed Job whose parallelism, completions and --shards agree, with the
start time passed in. The schemas themselves are kubernetes-validate's (offline)."""

import pathlib
import sys

import yaml
from dockerfile_parse import DockerfileParser

ROOT = pathlib.Path(__file__).resolve().parent.parent
problems = []


def check_dockerfile():
    d = DockerfileParser(str(ROOT / "Dockerfile"))
    stages = [i for i in d.structure if i["instruction"] == "FROM"]
    if len(stages) < 2:
        problems.append("Dockerfile: expected a multi-stage build (build stage + slim run stage)")
    for s in stages:
        image = s["value"].split()[0]
        name = image.rsplit("/", 1)[-1]
        if ":" not in name or name.endswith(":latest"):
            problems.append(f"Dockerfile line {s['startline'] + 1}: pin {image} to a version tag")
    last_from = max(s["startline"] for s in stages)
    users = [i for i in d.structure if i["instruction"] == "USER" and i["startline"] > last_from]
    if not users or users[-1]["value"].split(":")[0] in ("root", "0"):
        problems.append("Dockerfile: the final stage must switch to a non-root USER")
    for i in d.structure:
        if i["instruction"] != "COPY" or i["value"].startswith("--from"):
            continue
        for src in i["value"].split()[:-1]:
            if not (ROOT / src).exists():
                problems.append(f"Dockerfile line {i['startline'] + 1}: COPY source {src} does not exist")


def check_shards_job():
    job = yaml.safe_load((ROOT / "deploy/k8s/shards-job.yaml").read_text())
    spec = job["spec"]
    if spec.get("completionMode") != "Indexed":
        problems.append("shards-job.yaml: completionMode must be Indexed")
    args = spec["template"]["spec"]["containers"][0]["args"]
    shards = [a.split("=", 1)[1] for a in args if a.startswith("--shards=")]
    n = {spec.get("parallelism"), spec.get("completions")} | {int(s) for s in shards}
    if len(n) != 1 or not shards:
        problems.append(f"shards-job.yaml: parallelism, completions and --shards must agree (found {sorted(n)})")
    if not any(a.startswith("--start-at=") for a in args):
        problems.append("shards-job.yaml: the shards need --start-at")


check_dockerfile()
check_shards_job()
for p in problems:
    print(p, file=sys.stderr)
sys.exit(1 if problems else 0)
