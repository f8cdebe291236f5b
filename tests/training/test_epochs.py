"""Steps per epoch (dsconfig.training.epochs) against the real samplers, every rank simulated in one process.

* torchrun: torch's DistributedSampler(num_replicas, rank) under a DataLoader(batch_size, drop_last).
* deepspeed: DeepSpeed's own DeepSpeedDataLoader, built with the arguments deepspeed_io passes.
* accelerate / hf-trainer: Accelerate's prepare_data_loader(num_processes, process_index) and, for the
  optimizer steps, a real Accelerator's accumulate() and transformers' Trainer.set_initial_training_values.
* lightning: the loader a real Trainer(strategy="ddp", devices=world) hands its fit loop, through the
  functions FitLoop.setup_data calls (`_request_dataloader`, `_process_dataloader`), with the rank set on
  the strategy's cluster environment; optimizer steps from a real one-process Trainer.fit.
* jax: not installed here; the arithmetic of the documented assumption only.
"""

from __future__ import annotations

import logging
import math
import tempfile
import warnings
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsconfig.training.epochs import FRAMEWORKS, epoch, sharded_twice

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")
Accelerator = pytest.importorskip("accelerate").Accelerator
prepare_data_loader = pytest.importorskip("accelerate.data_loader").prepare_data_loader
DeepSpeedDataLoader = pytest.importorskip("deepspeed.runtime.dataloader").DeepSpeedDataLoader
transformers = pytest.importorskip("transformers")
connector = pytest.importorskip("lightning.pytorch.trainer.connectors.data_connector")
states = pytest.importorskip("lightning.pytorch.trainer.states")
DataLoader, DistributedSampler = torch.utils.data.DataLoader, torch.utils.data.DistributedSampler

for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
    logging.getLogger(name).setLevel(logging.ERROR)

sizes = st.integers(1, 400)
batches = st.integers(1, 16)
worlds = st.integers(1, 8)
accumulations = st.integers(1, 5)
EXAMPLES = settings(max_examples=40, deadline=None)


def check_rank0(framework, n, b, w, g, drop_last, per_rank, drawn=None):
    """`per_rank`: the batch sizes each rank's real loader yields, rank 0 first; `drawn`: the samples
    rank 0's sampler draws (len(sampler)) where that is what samples_per_device counts, else None
    (Accelerate: the samples in its batches)."""
    e = epoch(framework, n, b, w, g, drop_last)
    rank0 = per_rank[0]
    assert e.batches_per_device == len(rank0)
    assert e.samples_per_device == (sum(rank0) if drawn is None else drawn)
    assert e.last_batch == (rank0[-1] if rank0 else 0)
    assert all(size == b for size in rank0[:-1])
    assert e.last_accumulation == len(rank0) % g
    return e


# -- torchrun -----------------------------------------------------------------------------------------

@EXAMPLES
@given(sizes, batches, worlds, accumulations, st.booleans())
def test_torchrun_distributed_sampler(n, b, w, g, drop_last):
    data = list(range(n))
    per_rank, seen, drawn = [], set(), []
    for rank in range(w):
        loader = DataLoader(data, batch_size=b, drop_last=drop_last,
                            sampler=DistributedSampler(data, num_replicas=w, rank=rank, shuffle=True, seed=3))
        batches_seen = list(loader)
        assert len(loader) == len(batches_seen)
        per_rank.append([len(batch) for batch in batches_seen])
        drawn.append(len(list(loader.sampler)))
        seen.update(int(i) for batch in batches_seen for i in batch)
    assert len({len(sizes) for sizes in per_rank}) == 1  # the padding evens out the ranks
    e = check_rank0("torchrun", n, b, w, g, drop_last, per_rank, drawn[0])
    # the usual loop: optimizer.step() when (i + 1) % accumulation == 0, the partial rest dropped
    assert e.optimizer_steps == e.first_epoch_steps == sum((i + 1) % g == 0 for i in range(len(per_rank[0])))
    if not drop_last:
        assert seen == set(data)


# -- deepspeed ----------------------------------------------------------------------------------------

@EXAMPLES
@given(sizes, batches, worlds, accumulations, st.booleans())
def test_deepspeed_io_loader(n, b, w, g, drop_last):
    data = list(range(n))
    per_rank = []
    for rank in range(w):
        # what engine.deepspeed_io passes for the training route (local_rank >= 0 under the launcher)
        loader = DeepSpeedDataLoader(data, batch_size=b, pin_memory=False, local_rank=0, tput_timer=None,
                                     num_local_io_workers=0, data_parallel_world_size=w,
                                     data_parallel_rank=rank, dataloader_drop_last=drop_last)
        batches_seen = list(iter(loader))
        assert len(loader) == len(batches_seen)
        per_rank.append([len(batch) for batch in batches_seen])
        if rank == 0:
            drawn = len(list(loader.data_sampler))
    e = check_rank0("deepspeed", n, b, w, g, drop_last, per_rank, drawn)
    # the engine steps when its micro-step counter, kept across epochs, reaches a multiple of GAS
    k = len(per_rank[0])
    assert e.optimizer_steps == k / g and e.first_epoch_steps == sum((i + 1) % g == 0 for i in range(k))
    assert math.floor(3 * e.optimizer_steps) == sum((i + 1) % g == 0 for i in range(3 * k))


# -- accelerate / hf-trainer --------------------------------------------------------------------------

def accelerate_per_rank(n, b, w, drop_last):
    data = list(range(n))
    per_rank, seen = [], set()
    for rank in range(w):
        loader = prepare_data_loader(DataLoader(data, batch_size=b, drop_last=drop_last),
                                     num_processes=w, process_index=rank, put_on_device=False)
        batches_seen = list(loader)
        assert len(loader) == len(batches_seen)
        per_rank.append([len(batch) for batch in batches_seen])
        seen.update(int(i) for batch in batches_seen for i in batch)
    assert len({len(sizes) for sizes in per_rank}) == 1  # even_batches
    if not drop_last:
        assert seen == set(data)
    return per_rank


@EXAMPLES
@given(sizes, batches, worlds, accumulations, st.booleans())
def test_accelerate_batch_sampler_shard(n, b, w, g, drop_last):
    per_rank = accelerate_per_rank(n, b, w, drop_last)
    e = check_rank0("accelerate", n, b, w, g, drop_last, per_rank)
    assert e.optimizer_steps == accelerate_sync_steps(len(per_rank[0]), g)


def accelerate_sync_steps(k, g):
    """Optimizer steps in one epoch of `k` batches under a real Accelerator's accumulate()."""
    accelerator = Accelerator(gradient_accumulation_steps=g, cpu=True)
    model, loader = accelerator.prepare(torch.nn.Linear(1, 1), DataLoader(list(range(k)), batch_size=1))
    steps = 0
    for _ in loader:
        with accelerator.accumulate(model):
            steps += accelerator.sync_gradients
    return steps


@EXAMPLES
@given(sizes, batches, worlds, accumulations, st.booleans())
def test_hf_trainer_steps_per_epoch(n, b, w, g, drop_last):
    per_rank = accelerate_per_rank(n, b, w, drop_last)
    e = check_rank0("hf-trainer", n, b, w, g, drop_last, per_rank)
    if not per_rank[0]:
        assert e.optimizer_steps == 1  # max(0, 1); train() then refuses a loader without batches
        return
    with tempfile.TemporaryDirectory() as out:
        args = transformers.TrainingArguments(output_dir=out, use_cpu=True, report_to=[], per_device_train_batch_size=b,
                                 gradient_accumulation_steps=g, dataloader_drop_last=drop_last)
    # set_initial_training_values reads only these attributes of the Trainer
    stub = object.__new__(transformers.Trainer)
    stub.model, stub.args, stub.is_deepspeed_enabled, stub._train_batch_size = None, args, False, b
    stub.accelerator = SimpleNamespace(parallelism_config=None)
    loader = prepare_data_loader(DataLoader(list(range(n)), batch_size=b, drop_last=drop_last),
                                 num_processes=w, process_index=0, put_on_device=False)
    _, per_epoch, *_ = transformers.Trainer.set_initial_training_values(stub, args, loader)
    assert e.optimizer_steps == per_epoch


# -- lightning ----------------------------------------------------------------------------------------

class BucketSampler(DistributedSampler):
    """The shape of VITS's DistributedBucketSampler, passed as `batch_sampler=`: a DistributedSampler
    subclass that groups positions into buckets, pads each bucket to a multiple of
    num_replicas x batch_size and yields rank `rank`'s batches as lists of indices. Buckets here are
    contiguous runs of positions (VITS sorts by length; the count is what matters). `world` stands in
    for torch.distributed's (num_replicas, rank) defaults, since one process simulates every rank."""
    world = (1, 0)

    def __init__(self, dataset, batch_size, buckets=1, num_replicas=None, rank=None, shuffle=True, drop_last=False):
        num_replicas = self.world[0] if num_replicas is None else num_replicas
        rank = self.world[1] if rank is None else rank
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, drop_last=drop_last)
        self.batch_size = batch_size
        n = len(dataset)
        groups = [[i for i in range(n) if i * buckets // n == j] for j in range(buckets)]
        self.batches = []
        for group in filter(None, groups):
            total = math.ceil(len(group) / (num_replicas * batch_size)) * num_replicas * batch_size
            padded = (group * math.ceil(total / len(group)))[:total]
            mine = padded[rank::num_replicas]
            self.batches += [mine[i:i + batch_size] for i in range(0, len(mine), batch_size)]

    def __iter__(self):
        return iter(self.batches)

    def __len__(self):
        return len(self.batches)


class VitsSignatureSampler(BucketSampler):
    """VITS's exact constructor: `boundaries` required, no `drop_last`."""

    def __init__(self, dataset, batch_size, boundaries, num_replicas=None, rank=None, shuffle=True):
        super().__init__(dataset, batch_size, len(boundaries) - 1, num_replicas, rank, shuffle)


class Data(pl.LightningDataModule):
    def __init__(self, make_loader):
        super().__init__()
        self.make_loader = make_loader

    def train_dataloader(self):
        return self.make_loader()


def lightning_loader(make_loader, world, rank, use_distributed_sampler=True):
    """Rank `rank`'s training loader as Trainer(devices=world, strategy="ddp").fit prepares it
    (FitLoop.setup_data: `_request_dataloader` under Lightning's argument capture, then
    `_process_dataloader`, which swaps in the DistributedSampler of `trainer.distributed_sampler_kwargs`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = pl.Trainer(accelerator="cpu", devices=world, strategy="ddp" if world > 1 else "auto",
                             use_distributed_sampler=use_distributed_sampler, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
        if world > 1:
            trainer.strategy.cluster_environment.set_global_rank(rank)
            assert trainer.distributed_sampler_kwargs == {"num_replicas": world, "rank": rank}
        BucketSampler.world = (world, rank)
        data = Data(make_loader)
        data.trainer, trainer.datamodule = trainer, data
        loader = connector._request_dataloader(connector._DataLoaderSource(data, "train_dataloader"))
        return connector._process_dataloader(trainer, states.TrainerFn.FITTING, states.RunningStage.TRAINING, loader)


def batch_sizes(loader):
    seen = list(loader)
    assert len(loader) == len(seen)
    return [len(batch) for batch in seen]


@EXAMPLES
@given(sizes, batches, worlds, accumulations, st.booleans())
def test_lightning_plain_dataloader(n, b, w, g, drop_last):
    data = list(range(n))
    loaders = [lightning_loader(lambda: DataLoader(data, batch_size=b, drop_last=drop_last), w, rank)
               for rank in range(w)]
    per_rank = [batch_sizes(loader) for loader in loaders]
    assert len({len(sizes) for sizes in per_rank}) == 1
    assert isinstance(loaders[0].sampler, DistributedSampler if w > 1 else torch.utils.data.SequentialSampler)
    check_rank0("lightning", n, b, w, g, drop_last, per_rank, len(list(loaders[0].sampler)))


@pytest.mark.parametrize("k,g", [(7, 3), (6, 3), (1, 4), (5, 1), (2, 5)])
def test_lightning_optimizer_steps(k, g):
    """A real one-process fit: steps at every accumulate_grad_batches-th batch and at the epoch's end."""
    class Model(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def training_step(self, batch, _):
            return self.layer(batch.float().view(-1, 1)).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = pl.Trainer(accelerator="cpu", devices=1, max_epochs=2, accumulate_grad_batches=g, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Model(), DataLoader(list(range(k)), batch_size=1))
    e = epoch("lightning", k, 1, 1, g)
    assert e.batches_per_device == k and trainer.global_step == 2 * e.optimizer_steps == 2 * e.first_epoch_steps


@EXAMPLES
@given(sizes, batches, st.integers(2, 8), st.integers(1, 3))
def test_lightning_reinstantiates_a_rank_aware_batch_sampler(n, b, w, buckets):
    """use_distributed_sampler=True on more than one device: Lightning sees the DataLoader's default `.sampler` (not a
    DistributedSampler), builds DistributedSampler(dataset, num_replicas=w, rank=r, shuffle=True) and,
    the batch sampler not being a torch BatchSampler, calls type(batch_sampler)(that sampler,
    batch_size=..., drop_last=...): the bucket sampler now shards ceil(N / w) positions again."""
    data = list(range(n))
    per_rank = []
    for rank in range(w):
        loader = lightning_loader(lambda: DataLoader(data, batch_sampler=BucketSampler(data, b, buckets)), w, rank)
        sampler = loader.batch_sampler
        assert type(sampler) is BucketSampler and type(sampler.dataset) is DistributedSampler  # not the Wrapper
        assert sampler.dataset.dataset is data and sampler.dataset.shuffle
        assert len(sampler.dataset) == math.ceil(n / w)
        assert (sampler.num_replicas, sampler.rank) == (w, rank)
        indices = [int(i) for batch in loader for i in batch]
        assert max(indices) < math.ceil(n / w)  # positions in Lightning's sampler, not its indices
        per_rank.append(batch_sizes(loader))
    assert len(per_rank[0]) == sharded_twice(n, b, w)
    assert {len(sizes) for sizes in per_rank} == {sharded_twice(n, b, w)}
    # without Lightning's sampler, the project's own sharding alone: the epoch falls as 1 / w
    own = lightning_loader(lambda: DataLoader(data, batch_sampler=BucketSampler(data, b, 1)), w, 0,
                           use_distributed_sampler=False)
    assert type(own.batch_sampler) is BucketSampler and own.batch_sampler.dataset is data
    assert len(batch_sizes(own)) == math.ceil(n / (w * b))


def test_lightning_sharded_twice_report():
    """The report in issue 13: 1000 samples at batch 8 give 125, 32, 14 batches on 1, 2, 3 GPUs."""
    data = list(range(1000))
    real = [len(lightning_loader(lambda: DataLoader(data, batch_sampler=BucketSampler(data, 8)), w, 0))
            for w in (1, 2, 3)]
    assert real == [sharded_twice(1000, 8, w) for w in (1, 2, 3)] == [125, 32, 14]
    fixed = [len(lightning_loader(lambda: DataLoader(data, batch_sampler=BucketSampler(data, 8)), w, 0,
                                  use_distributed_sampler=False)) for w in (1, 2, 3)]
    assert fixed == [125, 63, 42]


@pytest.mark.parametrize("world", [2, 3])
def test_lightning_refuses_the_vits_signature(world):
    """VITS's constructor has no `drop_last`: Lightning's re-instantiation raises TypeError in setup
    (its own friendlier message matches only 'got multiple values' / 'missing N required')."""
    data = list(range(100))
    with pytest.raises(TypeError, match=r"VitsSignatureSampler.__init__\(\) got an unexpected keyword argument "
                                        r"'drop_last'"):
        lightning_loader(lambda: DataLoader(data, batch_sampler=VitsSignatureSampler(data, 8, [0, 50, 100])),
                         world, 0)
    ok = lightning_loader(lambda: DataLoader(data, batch_sampler=VitsSignatureSampler(data, 8, [0, 50, 100])),
                          world, 0, use_distributed_sampler=False)
    assert len(ok) == sum(math.ceil(50 / (world * 8)) for _ in range(2))
    one = lightning_loader(lambda: DataLoader(data, batch_sampler=VitsSignatureSampler(data, 8, [0, 50, 100])), 1, 0)
    assert len(one) == 2 * math.ceil(50 / 8)  # one device: Lightning leaves the loader alone


# -- jax and the arithmetic -----------------------------------------------------------------------------

@given(sizes, batches, worlds, accumulations, st.booleans())
def test_jax_global_batch_drops_the_remainder(n, b, w, g, drop_last):
    e = epoch("jax", n, b, w, g, drop_last)
    assert e.batches_per_device * b * w <= n < (e.batches_per_device + 1) * b * w
    assert e.drop_last and e.optimizer_steps == e.batches_per_device // g == e.first_epoch_steps
    assert e.last_batch == (b if e.batches_per_device else 0)


@given(sizes, batches, worlds)
def test_sharded_twice_is_the_square(n, b, w):
    assert sharded_twice(n, b, w) == math.ceil(n / (w * w * b))
    assert sharded_twice(n, b, 1) == epoch("lightning", n, b, 1).batches_per_device


def test_unknown_framework():
    assert set(FRAMEWORKS) == {"lightning", "torchrun", "accelerate", "hf-trainer", "deepspeed", "jax"}
    with pytest.raises(ValueError, match="unknown framework 'keras'"):
        epoch("keras", 10, 2, 1)
    for bad in ((-1, 2, 1, 1), (10, 0, 1, 1), (10, 2, 0, 1), (10, 2, 1, 0)):
        with pytest.raises(ValueError, match="must be at least 1"):
            epoch("torchrun", *bad)
    assert epoch("deepspeed", 0, 2, 3).batches_per_device == 0
