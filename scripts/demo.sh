#!/usr/bin/env bash
echo "scripts/demo.sh: not yet"
