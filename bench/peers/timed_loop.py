"""timed_loop.py - the timed epochs of a Python peer's DataLoader (the
datasets and pyarrow loops of bench/parquet.sh): samples and batches taken,
seconds from the first iteration to the last batch, and the start-up (the
time to the first batch, workers' start included)."""
import time


def run_epochs(dl, epochs):
    samples = batches = 0
    startup = None
    start = time.perf_counter()
    for _ in range(epochs):
        for x, _y in dl:
            if startup is None:
                startup = time.perf_counter() - start
            samples += x.shape[0]
            batches += 1
    seconds = time.perf_counter() - start
    return {"samples": samples, "batches": batches, "seconds": round(seconds, 3),
            "samples_per_s": round(samples / seconds, 2), "startup_s": round(startup or 0, 3)}
