#!/usr/bin/python3
"""A scripted MongoDB wire peer for lockstep's Mongo contract tests (Debian's python3-mockupdb).

Usage: mongo_peer.py --script SCRIPT.json --record RECORD.jsonl

It listens on 127.0.0.1 at a kernel-chosen port and prints "PORT <n>" (flushed) once it accepts
connections; if mockupdb is missing it prints "UNAVAILABLE <why>" and exits with 77. It runs until
it is killed (by PID, by the test that started it).

The driver's handshake and monitoring commands (hello, isMaster, ping, buildInfo, endSessions,
...) are answered automatically with a hello of maxWireVersion 17: a standalone, or with
"topology": "primary" a one-member replica set's primary named rs0.

Every other command is recorded, in arrival order, as one JSON line {"command": {...}} appended to
RECORD (flushed before the peer acts on it), and answered by the next action of the script:
  {"reply": {...}}       send this document (ok defaults to 1 when absent)
  {"hang": true}         never answer (the client's socket timeout must fire)
  {"close": true}        close the connection without answering
  {"exit": true}         the whole peer vanishes at once (os._exit), every socket with it
  {"echo_types": true}   answer {"ok": 1, "types": {field: python/BSON type name}} for the command
A command beyond the script is answered {"ok": 0, "code": 8000, "errmsg": "mongo_peer: ..."}.

JSON <-> BSON follows lockstep's MongoDocument conventions: {"$date": ms} is a BSON date,
{"$oid": hex} an ObjectId; in scripted replies {"$timestamp": [t, i]} is a BSON timestamp and
{"$int64": n} a BSON int64. Recorded BSON types without a JSON form become {"$unsupported": NAME}.
"""
import argparse
import calendar
import datetime
import json
import os
import sys
import threading


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()

    try:
        import mockupdb
        from bson.int64 import Int64
        from bson.objectid import ObjectId
        from bson.timestamp import Timestamp
    except ImportError as error:
        print("UNAVAILABLE python3-mockupdb (apt-get install python3-mockupdb): %s" % error, flush=True)
        sys.exit(77)

    with open(args.script) as f:
        script = json.load(f)
    actions = list(script.get("actions", []))
    topology = script.get("topology", "standalone")
    lock = threading.Lock()
    record = open(args.record, "a")
    epoch = datetime.datetime(1970, 1, 1)

    def to_bson_value(value):
        if isinstance(value, dict):
            if list(value.keys()) == ["$date"]:
                return epoch + datetime.timedelta(milliseconds=value["$date"])
            if list(value.keys()) == ["$oid"]:
                return ObjectId(value["$oid"])
            if list(value.keys()) == ["$timestamp"]:
                return Timestamp(*value["$timestamp"])
            if list(value.keys()) == ["$int64"]:
                return Int64(value["$int64"])
            return {k: to_bson_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [to_bson_value(v) for v in value]
        return value

    def to_json_value(value):
        if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, datetime.datetime):
            return {"$date": calendar.timegm(value.utctimetuple()) * 1000 + value.microsecond // 1000}
        if isinstance(value, ObjectId):
            return {"$oid": str(value)}
        if isinstance(value, dict):
            return {k: to_json_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [to_json_value(v) for v in value]
        return {"$unsupported": type(value).__name__}

    def type_name(value):
        return "int32" if type(value) is int else type(value).__name__

    server = mockupdb.MockupDB(request_timeout=int(1e6))
    server._address = ("127.0.0.1", 0)  # loopback only, kernel-chosen port
    port = server.run()
    me = "127.0.0.1:%d" % port
    connection_ids = iter(range(1, 1 << 30))

    def hello():
        doc = {
            "ismaster": True, "isWritablePrimary": True, "helloOk": True,
            "minWireVersion": 0, "maxWireVersion": 17,
            "maxBsonObjectSize": 16 * 1024 * 1024, "maxMessageSizeBytes": 48000000,
            "maxWriteBatchSize": 100000, "localTime": datetime.datetime.utcnow(),
            "connectionId": next(connection_ids), "readOnly": False, "ok": 1,
        }
        if topology == "primary":
            doc.update({"setName": "rs0", "setVersion": 1, "hosts": [me], "primary": me, "me": me,
                        "secondary": False})
        return doc

    handshake = {"ismaster", "hello", "ping", "buildinfo", "endsessions", "getlasterror", "saslstart"}

    def handle(request):
        name = next(iter(request.doc.keys()), "").lower() if request.docs else ""
        if name in handshake:
            return request.replies(hello() if name in ("ismaster", "hello") else {"ok": 1})
        with lock:
            record.write(json.dumps({"command": to_json_value(request.doc)}) + "\n")
            record.flush()
            action = actions.pop(0) if actions else {
                "reply": {"ok": 0, "code": 8000, "errmsg": "mongo_peer: no scripted reply left for " + name}}
        if action.get("hang"):
            return True
        if action.get("close"):
            return request.hangup()
        if action.get("exit"):
            os._exit(0)
        if action.get("echo_types"):
            return request.replies({"ok": 1, "types": {k: type_name(v) for k, v in request.doc.items()}})
        reply = to_bson_value(action["reply"])
        reply.setdefault("ok", 1)
        return request.replies(reply)

    server.autoresponds(handle)
    print("PORT %d" % port, flush=True)
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main()
