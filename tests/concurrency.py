"""Running one piece of test code in several threads at once."""
import threading


def run_in_threads(work, n, timeout=60):
    """Call work(i) for i in range(n), each in its own thread, all started before any is
    joined; assert that none raised (the errors are listed) and that all finished."""
    errors = []

    def guarded(i):
        try:
            work(i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
