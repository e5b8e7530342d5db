"""txapi.py: the Python wrapper (python/txexec.py) under test.

    txapi.py probe                  begin()'s outcome outside txexec
    txapi.py counter FILE THREADS N THREADS threads x N increments in attempts()
    txapi.py abort DIR LOG          transaction() writes DIR/a, pauses to log,
                                    then raises: rolled back, the log line kept
"""
import os
import sys
import threading

import txexec


def increment(path):
    with open(path) as f:
        n = int(f.read())
    with open(path, "w") as f:
        f.write(f"{n + 1}\n")


def main(argv):
    if argv[1] == "probe":
        try:
            txexec.begin()
        except txexec.NotSupervised as e:
            print(f"NotSupervised: {e}")
            return 0
        print("ok")
        txexec.end()
        return 0
    if argv[1] == "counter":
        path, threads, n = argv[2], int(argv[3]), int(argv[4])
        errors = []

        def worker(use_run):
            try:
                for _ in range(n):
                    if use_run:
                        txexec.run(increment, path, max_tries=0)
                        continue
                    for attempt in txexec.attempts(max_tries=0):
                        with attempt:
                            increment(path)
            except Exception as e:  # reported by the test
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(i % 2 == 0,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        if errors:
            print(errors, file=sys.stderr)
            return 1
        return 0
    if argv[1] == "abort":
        d, log = argv[2], argv[3]
        try:
            with txexec.transaction():
                with open(os.path.join(d, "a"), "w") as f:
                    f.write("changed inside the transaction\n")
                txexec.pause()
                with open(log, "a") as f:
                    f.write("logged while paused\n")
                txexec.resume()
                raise KeyError("give up")
        except KeyError:
            print("rolled back")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
