#!/usr/bin/env bash
# Validates deploy/k8s/*.yaml against the Kubernetes schemas offline (PyPI kubernetes-validate,
# strict: unknown fields are errors) and checks the Dockerfile and the shards Job
# (scripts/check_deploy.py, with PyPI dockerfile-parse). hadolint is not on the package
# registries this repository's CI reaches; Docker does not run here.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-deploy
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q kubernetes-validate dockerfile-parse pyyaml
fi
"$venv/bin/kubernetes-validate" --strict --quiet deploy/k8s/*.yaml
"$venv/bin/python" scripts/check_deploy.py
echo "deploy: manifests and Dockerfile OK"
