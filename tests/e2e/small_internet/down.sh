#!/bin/sh
# Takes down what up.sh NAME FOLDER built: the servers, then the namespace (and with it the
# veth pair).
name=$1
folder=$2
[ -e "$folder/servers.pid" ] && kill "$(cat "$folder/servers.pid")" 2>/dev/null
ip netns pids "$name" 2>/dev/null | xargs -r kill 2>/dev/null
ip netns del "$name" 2>/dev/null
exit 0
