#!/bin/sh
# Runs the MCP reference server installed beside this file (npm install
# --prefix examples/mcp @modelcontextprotocol/server-everything) over stdio.
# exec: the server takes this process's place, so it dies with deskd.
exec node --jitless "$(dirname "$0")/node_modules/@modelcontextprotocol/server-everything/dist/index.js" stdio
