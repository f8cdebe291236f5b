"""Steps per epoch as each framework's sampler and loop really iterate them.

`per_device` is the batch one process draws per step, `accumulation` the batches per optimizer
step, `world_size` the processes launched. What differs between frameworks is who shards the data
and what happens to the remainder:

  torchrun    the script's DistributedSampler (padded to ceil(N / world) samples per rank) under a
              DataLoader(batch_size, drop_last); the usual loop steps every `accumulation` batches and
              drops a partial accumulation at the end of the epoch
  lightning   with more than one device Lightning rebuilds the DataLoader around a DistributedSampler
              (use_distributed_sampler=True) and steps at every accumulate_grad_batches-th batch and
              at the end of the epoch
  deepspeed   deepspeed_io: a DistributedSampler over the data-parallel ranks, a DataLoader with
              dataloader_drop_last; the engine counts micro-steps across epochs (batches / GAS on average)
  accelerate  prepare(): a DataLoader over the whole data set whose batches are dealt to the ranks in
  hf-trainer  turn (BatchSamplerShard, even_batches repeats samples to fill the last round); steps every
              GAS batches and at the end of the epoch (the Trainer: at least one)
  jax         one global batch (per_device x devices) split over the devices, the remainder dropped, as
              tf.data `batch(drop_remainder=True)` and grain loaders do under pmap / a sharded mesh:
              an assumption, not checked against JAX

Pure arithmetic, no imports: the lint path uses it. tests/training/test_epochs.py replays every
framework but jax against the real code, each rank simulated in one process: torch's
DistributedSampler, DeepSpeed's DeepSpeedDataLoader, Accelerate's prepare_data_loader and
accumulate(), transformers' Trainer.set_initial_training_values and Lightning 2.6's Trainer.
"""

from __future__ import annotations

from typing import NamedTuple

FRAMEWORKS = ("lightning", "torchrun", "accelerate", "hf-trainer", "deepspeed", "jax")

# Samples in a training set: sixty times the tokens Llama 3 was trained on (15 trillion), let alone
# samples. It keeps epochs × steps per epoch a finite float in the Trainer's step count.
MAX_DATASET_SIZE = 10 ** 15

HOW = {
    "torchrun": "a DistributedSampler gives each process ceil(N / world) samples (padded by repeating); the "
                "loop steps every gradient-accumulation batches",
    "lightning": "Lightning gives each process a DistributedSampler of ceil(N / world) samples (padded by "
                 "repeating) and steps every accumulate_grad_batches batches and at the end of the epoch",
    "deepspeed": "a DistributedSampler gives each GPU ceil(N / world) samples and the engine steps at every "
                 "gradient_accumulation_steps-th micro-batch, counting across epochs",
    "accelerate": "prepare() deals the batches out to the processes in turn (repeating samples to even out the "
                  "last round); accumulate() steps every gradient_accumulation_steps batches and at epoch end",
    "hf-trainer": "Accelerate deals the batches out to the GPUs in turn (repeating samples to even out the last "
                  "round) and the Trainer steps every gradient_accumulation_steps batches and at epoch end",
    "jax": "each step takes one global batch and splits it over the devices; the remainder of the data set "
           "is dropped",
}


class Epoch(NamedTuple):
    """One epoch on rank 0."""
    framework: str
    world_size: int
    per_device: int
    accumulation: int
    drop_last: bool
    samples_per_device: int  # samples rank 0 draws (padding and repeats included)
    batches_per_device: int  # batches rank 0 runs
    optimizer_steps: float  # an int, except for DeepSpeed's running average (batches / GAS)
    last_batch: int  # samples in rank 0's last batch (0 when there is none)
    first_epoch_steps: int  # optimizer steps that complete within the first epoch
    last_accumulation: int  # batches in the epoch's last, partial accumulation (0 if none)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def epoch(framework: str, dataset_size: int, per_device: int, world_size: int, accumulation: int = 1,
          drop_last: bool = False) -> Epoch:
    """Rank 0's epoch under `framework` (one of FRAMEWORKS)."""
    n, b, w, g = dataset_size, per_device, world_size, accumulation
    if n < 0 or min(b, w, g) < 1:
        raise ValueError(f"dataset size {n}, batch {b}, world size {w}, accumulation {g}: the data set cannot be "
                         "negative and the others must be at least 1")
    if framework in ("accelerate", "hf-trainer"):
        total = n // b if drop_last else _ceil(n, b)
        batches = total // w + (1 if total % w and not drop_last else 0)
        if w == 1:  # one process: prepare() leaves the batch sampler alone, the last batch may be short
            samples = min(n, batches * b)
            last = samples - (batches - 1) * b if batches else 0
        else:  # BatchSamplerShard(even_batches=True): every batch is full
            samples = batches * b
            last = b if batches else 0
        steps = _ceil(batches, g)
        if framework == "hf-trainer":  # set_initial_training_values: max(..., 1)
            steps = max(steps, 1)
        return Epoch(framework, w, b, g, drop_last, samples, batches, steps, last, steps if batches else 0,
                     batches % g)
    if framework == "jax":
        # An assumption, not replayed against JAX (not installed for the tests): one global batch of
        # per_device x devices per step, the remainder dropped (tf.data `batch(drop_remainder=True)`).
        batches = n // (b * w)
        return Epoch(framework, w, b, g, True, batches * b, batches, batches // g, b if batches else 0,
                     batches // g, batches % g)
    if framework not in ("torchrun", "lightning", "deepspeed"):
        raise ValueError(f"unknown framework {framework!r}")
    samples = _ceil(n, w)  # DistributedSampler(drop_last=False) pads every rank to ceil(N / world)
    batches = samples // b if drop_last else _ceil(samples, b)
    last = 0 if not batches else (b if drop_last or samples % b == 0 else samples % b)
    if framework == "deepspeed":
        steps: float = batches / g
    elif framework == "lightning":
        steps = _ceil(batches, g)
    else:
        steps = batches // g
    first = steps if framework == "lightning" else batches // g
    return Epoch(framework, w, b, g, drop_last, samples, batches, steps, last, first, batches % g)


def sharded_twice(dataset_size: int, per_device: int, world_size: int) -> int:
    """Batches each rank runs when a rank-aware batch sampler meets Lightning's own sharding.

    The shape (VITS's DistributedBucketSampler): a DistributedSampler subclass that pads its data to a
    multiple of world x batch and yields each rank's batches as index lists, passed to the DataLoader
    as `batch_sampler=`, under Trainer(use_distributed_sampler=True) (the default) on more than one
    device. What Lightning 2.6 does (_DataConnector._prepare_dataloader): it looks at the DataLoader's
    `.sampler`, which is the SequentialSampler a DataLoader makes next to a batch sampler, not the
    batch sampler; that is no DistributedSampler, so it builds
    DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True), and, the batch sampler
    being no torch BatchSampler but having `batch_size` and `drop_last`, re-creates it as
    `type(batch_sampler)(that DistributedSampler, batch_size=..., drop_last=...)`. The project's
    sampler so takes Lightning's sampler for its data set: it sees ceil(N / world) positions and
    shards them over the ranks again, every other argument at its default (num_replicas and rank
    from torch.distributed, so the same world; buckets as the defaults make them); a sampler that
    yields positions (as bucket samplers do) then draws only from the first ceil(N / world) samples
    of the real data set, the rest never trains. With one bucket:
    ceil(ceil(N / world) / (world x batch)) = ceil(N / (world^2 x batch)) batches per rank; 1000
    samples at batch 8: 125 on 1 GPU, 32 on 2, 14 on 3. A constructor without a `drop_last`
    parameter (VITS's own) or with another required argument makes Lightning raise TypeError at the
    start of fit instead. Trainer(use_distributed_sampler=False) leaves the DataLoader alone:
    ceil(N / (world x batch)) batches per rank with one bucket.
    """
    n, b, w = dataset_size, per_device, world_size
    return _ceil(_ceil(n, w), w * b)
