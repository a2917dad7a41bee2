#!/usr/bin/python3
# A fake mongod for the contract test of MongodProcess (services/mongo/real/mongod_server.h): it
# answers hello as an uninitiated member until replSetInitiate, then as a secondary for a few
# checks (an election under way), then as the writable primary of rs0. Nothing else is real.
import sys, threading, datetime, mockupdb
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
state = {"initiated": False, "checks": 0}
s = mockupdb.MockupDB(port=port, request_timeout=int(1e6))
s._address = ("127.0.0.1", port)
def handle(r):
    name = next(iter(r.doc.keys())).lower()
    if name in ("ismaster", "hello"):
        d = {"ismaster": False, "isWritablePrimary": False, "maxWireVersion": 17, "minWireVersion": 0, "helloOk": True, "ok": 1}
        if state["initiated"]:
            state["checks"] += 1
            d["setName"] = "rs0"; d["hosts"] = ["127.0.0.1:%d" % port]
            if state["checks"] > 3:
                d.update({"ismaster": True, "isWritablePrimary": True, "primary": "127.0.0.1:%d" % port})
        return r.replies(d)
    if name == "replsetinitiate":
        print("INITIATE", dict(r.doc), flush=True)
        state["initiated"] = True
        return r.replies({"ok": 1})
    return r.replies({"ok": 1})
s.autoresponds(handle)
s.run()
print("fake mongod on", port, " ".join(args), flush=True)
threading.Event().wait()
