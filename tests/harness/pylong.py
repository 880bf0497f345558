#!/usr/bin/python3
"""pylong.py KUBECONFIG SIGNAL_FILE CONTEXT WAIT_SECONDS

A long-running Python kubernetes client: one API client, one request,
then (without restarting) a second request once SIGNAL_FILE appears —
the test re-logs the user in between.  CONTEXT "-" means the kubeconfig's
current context.  Prints the first pod's name after each request.
"""
import os
import sys
import time

from kubernetes import client, config


def first_pod(api):
    return api.list_namespaced_pod("default").items[0].metadata.name


def main():
    kubeconfig, signal, context, wait = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    config.load_kube_config(config_file=kubeconfig, context=None if context == "-" else context)
    api = client.CoreV1Api()
    print(first_pod(api), flush=True)
    deadline = time.monotonic() + wait
    while not os.path.exists(signal):
        if time.monotonic() > deadline:
            sys.exit("no re-login signal")
        time.sleep(0.05)
    print(first_pod(api), flush=True)


if __name__ == "__main__":
    main()
