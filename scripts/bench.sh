#!/usr/bin/env bash
echo "scripts/bench.sh: not yet"
