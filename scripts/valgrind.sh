#!/usr/bin/env bash
echo "scripts/valgrind.sh: not yet"
