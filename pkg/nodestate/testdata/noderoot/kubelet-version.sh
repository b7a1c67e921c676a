#!/bin/sh
# A stand-in for the kubelet binary: the collect script only asks it for its version.
[ "$1" = --version ] && echo "Kubernetes v1.37.1"
