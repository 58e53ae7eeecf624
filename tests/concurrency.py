"""Running one piece of test code in several threads at once."""
import threading


def run_together(n, work, timeout=60.0):
    """Run work(i) in n threads started at one barrier; their results, in order. An
    exception in any thread fails the test with that exception; `timeout` only guards
    against a hang."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def body(i):
        try:
            barrier.wait(timeout)
            results[i] = work(i)
        except BaseException as e:   # noqa: BLE001 - reported to the test below
            errors.append(e)
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock"
    if errors:
        raise errors[0]
    return results
