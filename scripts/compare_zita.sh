#!/bin/sh
# sluice vs zita-convolver, side by side in one run; see compare_zita.py for the options.
exec python3 "$(dirname "$0")/compare_zita.py" "$@"
