"""What the dlcp process group keeps per collective: the job in flight and the running totals."""


class CollectiveTotals:
    """Sums over every collective since the group was created or reset (metrics.py turns them
    into ratios)."""

    def __init__(self):
        self.collectives = 0
        self.lossy_collectives = 0
        self.entries = 0
        self.contributions_expected = 0
        self.contributions_received = 0
        self.broadcast_entries_missing = 0
        self.seconds = 0.0

    def add(self, results, lossy):
        self.collectives += len(results)
        self.lossy_collectives += lossy
        for result in results:
            self.entries += result.entries
            self.contributions_expected += result.contributions_expected
            self.contributions_received += result.contributions_received
            self.broadcast_entries_missing += result.broadcast_entries_missing
            self.seconds += result.seconds


class Job:
    """A collective in flight: its dlcp works, what to do with the results (on the completion
    thread, holding the GIL) and the value its torch future carries."""

    def __init__(self, works=(), finish=None, lossy=0):
        self.works = list(works)
        self.finish = finish
        self.lossy = lossy


def combined(jobs):
    """One job for several (the coalesced collectives): every work, every finish, in order."""
    works = [work for job in jobs for work in job.works]
    finishes = [(job.finish, len(job.works)) for job in jobs]

    def finish(results):
        start = 0
        for each, count in finishes:
            if each is not None:
                each(results[start : start + count])
            start += count

    return Job(works, finish, sum(job.lossy for job in jobs))
