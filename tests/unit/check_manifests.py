#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Parses every Kubernetes manifest under deploy/k8s with python3-yaml and checks the fields
# a cluster would refuse without: apiVersion/kind/name, selectors matching template labels,
# containers with a name and an image, volume mounts naming declared volumes, and the JSON
# embedded in ConfigMaps.
import json
import pathlib
import sys

import yaml

WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}


def check(doc, where):
    errs = []
    for key in ("apiVersion", "kind", "metadata"):
        if key not in doc:
            errs.append(f"{where}: missing {key}")
    if errs:
        return errs
    name = doc["metadata"].get("name")
    if not name:
        errs.append(f"{where}: metadata.name missing")
    where = f"{where} {doc['kind']}/{name}"
    if doc["kind"] == "ConfigMap":
        for k, v in doc.get("data", {}).items():
            if k.endswith(".json") or k.endswith(".json.in"):
                try:
                    json.loads(v)
                except json.JSONDecodeError as e:
                    errs.append(f"{where}: data.{k}: {e}")
    if doc["kind"] in WORKLOADS:
        spec = doc.get("spec", {})
        sel = spec.get("selector", {}).get("matchLabels", {})
        labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
        if not sel or any(labels.get(k) != v for k, v in sel.items()):
            errs.append(f"{where}: selector {sel} does not match template labels {labels}")
        pod = spec.get("template", {}).get("spec", {})
        volumes = {v["name"] for v in pod.get("volumes", [])}
        for c in pod.get("initContainers", []) + pod.get("containers", []):
            if not c.get("name") or not c.get("image"):
                errs.append(f"{where}: a container lacks name or image")
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    errs.append(f"{where}: {c.get('name')} mounts undeclared volume {m['name']}")
        if not pod.get("containers"):
            errs.append(f"{where}: no containers")
    return errs


def main():
    root = pathlib.Path(sys.argv[1])
    files = sorted(root.glob("*.yaml"))
    if not files:
        print(f"no manifests in {root}")
        return 1
    errs, n = [], 0
    for f in files:
        for i, doc in enumerate(yaml.safe_load_all(f.read_text())):
            if doc is None:
                continue
            n += 1
            errs += check(doc, f"{f.name}#{i}")
    for e in errs:
        print(e)
    print(f"{len(files)} files, {n} documents, {len(errs)} errors")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
