#!/usr/bin/python3
"""Ask a toolgate server whether tool calls may run, over gRPC.

    check_tool.py [ADDR]        (default: $TOOLGATE_ADDR, then 127.0.0.1:50051)

It sends a few unary Check calls, then one short CheckStream session
(session context, a transcript append, several checks), and prints every
decision. The expected answers are those of toolgate's embedded default
policy with no classifier, so the example doubles as a test: it exits 0 when
every answer is as expected, 1 when one is not, and 2 when the server could
not be asked.

The stubs are generated from proto/toolgate/v1/permission.proto into gen/
beside this file (see ../README.md).
"""

import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "gen"))

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from toolgate.v1 import permission_pb2 as pb  # noqa: E402
from toolgate.v1 import permission_pb2_grpc as pb_grpc  # noqa: E402

TIMEOUT_SECONDS = 10


def attestation(directory):
    """Where this client stands, for the server to compare with its own
    view: the kernel's boot id and the working directory's device and
    inode. A server that cannot match them proves nothing from its disk
    (edits, reads, searches are then not allowed by proofs about files).
    None when they cannot be read: the server then decides without."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot_id = f.read().strip()
        st = os.stat(directory)
        # The mount namespace and root place the whole view: without
        # them, the server counts only the working directory's files as
        # this client's.
        ns = os.stat("/proc/self/ns/mnt")
        root = os.stat("/")
    except OSError:
        return None
    return pb.Attestation(boot_id=boot_id, working_directory_device=st.st_dev,
                          working_directory_inode=st.st_ino, mount_namespace=ns.st_ino,
                          root_device=root.st_dev, root_inode=root.st_ino)


def tool_call(name, **tool_input):
    """Builds a ToolCall; the input is a google.protobuf.Struct."""
    call = pb.ToolCall(name=name)
    call.input.update(tool_input)
    return call


def describe(resp):
    return "%s (%s) %s" % (
        pb.Decision.Name(resp.decision),
        pb.DecisionSource.Name(resp.source),
        resp.reason,
    )


def show(want):
    """Spells an expected stream answer."""
    if isinstance(want, int):
        return "error %d" % want
    return "%s (%s)" % (pb.Decision.Name(want[0]), pb.DecisionSource.Name(want[1]))


def unary_checks(stub, cwd):
    """Returns the number of unexpected answers."""
    here = attestation(cwd)
    cases = [
        # (what, tool call, expected decision, expected source[, attestation])
        ("read a file of the project", tool_call("Read", file_path=os.path.join(cwd, "README.md")),
         pb.DECISION_ALLOW, pb.DECISION_SOURCE_SAFE_TOOL),
        # Attesting another directory than the server finds at the working
        # directory's path: nothing is proven from the disk, so the read
        # is asked about (no classifier is configured).
        ("read, attesting another dir", tool_call("Read", file_path=os.path.join(cwd, "README.md")),
         pb.DECISION_ASK, pb.DECISION_SOURCE_NO_CLASSIFIER, attestation("/")),
        ("wipe the disk", tool_call("Bash", command="rm -rf /"),
         pb.DECISION_DENY, pb.DECISION_SOURCE_RULE),
        ("read an SSH private key", tool_call("Read", file_path="/home/dev/.ssh/id_rsa"),
         pb.DECISION_DENY, pb.DECISION_SOURCE_RULE),
    ]
    failures = 0
    for what, call, want, want_source, *attested in cases:
        req = pb.CheckRequest(tool=call, working_directory=cwd, session_id="python-example",
                              attestation=attested[0] if attested else here)
        resp = stub.Check(req, timeout=TIMEOUT_SECONDS, wait_for_ready=True)
        print("Check %-28s %s" % (what + ":", describe(resp)))
        if (resp.decision, resp.source) != (want, want_source):
            print("  unexpected: want %s" % show((want, want_source)))
            failures += 1
    return failures


def stream_session(stub, cwd):
    """One agent session over CheckStream. Returns the number of unexpected
    answers."""
    # request_id -> expected (decision, source), or an int: the gRPC code of
    # an expected CheckError.
    expected = {
        "s1": (pb.DECISION_ALLOW, pb.DECISION_SOURCE_SAFE_TOOL),
        "s2": (pb.DECISION_ALLOW, pb.DECISION_SOURCE_ACCEPT_EDITS),
        "s3": (pb.DECISION_DENY, pb.DECISION_SOURCE_RULE),
        "s4": grpc.StatusCode.INVALID_ARGUMENT.value[0],  # no tool name
    }
    readme = os.path.join(cwd, "README.md")
    requests = [
        # Checks leave working directory, mode and session id empty: the
        # session context supplies them.
        pb.CheckStreamRequest(session=pb.SessionContext(
            session_id="python-example-stream",
            working_directory=cwd,
            mode=pb.PERMISSION_MODE_AUTO,
            attestation=attestation(cwd),
        )),
        pb.CheckStreamRequest(transcript=pb.TranscriptAppend(entries=[
            pb.TranscriptEntry(role=pb.ROLE_USER, text="Fix the typo in the README."),
        ])),
        pb.CheckStreamRequest(check=pb.CheckRequest(request_id="s1", tool=tool_call("Read", file_path=readme))),
        pb.CheckStreamRequest(check=pb.CheckRequest(request_id="s2", tool=tool_call(
            "Edit", file_path=readme, old_string="teh", new_string="the"))),
        pb.CheckStreamRequest(check=pb.CheckRequest(request_id="s3", tool=tool_call(
            "Bash", command="cat ~/.aws/credentials"))),
        pb.CheckStreamRequest(check=pb.CheckRequest(request_id="s4", tool=pb.ToolCall())),
    ]
    # Sending everything and then closing our side is enough here: the
    # server answers every check it received before it ends the stream. A
    # long-lived agent would feed the request iterator from a queue instead.
    answers = {}
    for msg in stub.CheckStream(iter(requests), timeout=TIMEOUT_SECONDS, wait_for_ready=True):
        answers[msg.request_id] = msg

    failures = 0
    for rid, want in expected.items():
        msg = answers.pop(rid, None)
        if msg is None:
            print("Stream %s: no answer" % rid)
            failures += 1
            continue
        if msg.WhichOneof("result") == "error":
            got = msg.error.code
            print("Stream %s: error %d %s" % (rid, msg.error.code, msg.error.message))
        else:
            got = (msg.response.decision, msg.response.source)
            print("Stream %s: %s" % (rid, describe(msg.response)))
        if got != want:
            print("  unexpected: want %s" % show(want))
            failures += 1
    for rid, msg in answers.items():
        print("Stream: unexpected message for %r: %s" % (rid, json_format.MessageToJson(msg)))
        failures += 1
    return failures


def main(argv):
    if len(argv) > 2:
        print("usage: check_tool.py [ADDR]", file=sys.stderr)
        return 2
    addr = argv[1] if len(argv) == 2 else os.environ.get("TOOLGATE_ADDR", "127.0.0.1:50051")
    cwd = os.getcwd()
    try:
        with grpc.insecure_channel(addr) as channel:
            stub = pb_grpc.PermissionServiceStub(channel)
            failures = unary_checks(stub, cwd) + stream_session(stub, cwd)
    except grpc.RpcError as err:
        # The server could not decide: a real agent fails closed here.
        print("toolgate at %s could not decide: %s %s" % (addr, err.code().name, err.details()), file=sys.stderr)
        return 2
    if failures:
        print("%d unexpected answer(s)" % failures, file=sys.stderr)
        return 1
    print("all answers as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
