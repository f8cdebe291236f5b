"""DS8xx training scripts, read statically (never imported or executed): samplers a Lightning Trainer
shards again, batch sizes made floats by true division, batches a JAX loader cannot split over the
devices, a Lightning offload strategy given a torch optimizer. Checked by dsconfig.training.scripts.
"""

from __future__ import annotations

from ..phases import INITIALIZE, SILENT, STEP
from .rule import ERROR, Rule, folder

_BUCKET_SAMPLER = ("samplers.py", """
    import torch.utils.data.distributed


    class BucketSampler(torch.utils.data.distributed.DistributedSampler):
        def __init__(self, dataset, batch_size, num_replicas=None, rank=None):
            super().__init__(dataset, num_replicas=num_replicas, rank=rank)
            self.batch_size = batch_size

        def __iter__(self):
            ids = list(range(self.rank, len(self.dataset), self.num_replicas))
            return iter([ids[i:i + self.batch_size] for i in range(0, len(ids), self.batch_size)])
    """)


def _lightning_train(keep: str) -> str:
    return f"""
        import lightning as L
        from torch.utils.data import DataLoader

        from samplers import BucketSampler


        class TTSData(L.LightningDataModule):
            def __init__(self, dataset):
                super().__init__()
                self.dataset = dataset

            def train_dataloader(self):
                sampler = BucketSampler(self.dataset, batch_size=8)
                return DataLoader(self.dataset, batch_sampler=sampler, num_workers=4)


        def main(model, dataset):
            trainer = L.Trainer(accelerator="gpu", devices=-1, max_epochs=100{keep})
            trainer.fit(model, TTSData(dataset))
        """


LIGHTNING_SHARDED_TWICE = Rule(
    "DS800", "lightning-sharded-twice", ERROR,
    summary="A Lightning Trainer shards again the batches of a sampler that already shards by rank",
    what="""Reports a Lightning `Trainer` left at the default `use_distributed_sampler=True` (Lightning 1.x:
    `replace_sampler_ddp=True`) in a script whose DataLoaders (in the script or in the files it imports) get a
    batch sampler that already shards by rank, or a sampler that does and is no `DistributedSampler` (which
    Lightning would leave alone): a `DistributedSampler` subclass, a sampler built with `num_replicas`/`rank`,
    or one whose class reads the rank. The evidence lines name the DataLoader, the sampler and why it shards.
    With `--dataset-size` and a batch size (a literal, or a training config's value) it shows the batches per
    epoch at each world size.""",
    why="""Nothing fails. On N GPUs Lightning deals the already sharded batches out over the processes once
    more, so each GPU runs about 1/N² of the data instead of 1/N: for 1000 samples at batch 8, 125 batches
    per epoch on 1 GPU, 32 on 2 and 14 on 3 where 125, 63 and 42 were meant. Epochs, schedulers and
    checkpoints keyed on steps all shift with the GPU count.""",
    fails_in=(SILENT,),
    failing=folder(("train.py", _lightning_train("")), _BUCKET_SAMPLER, lint=("train.py",),
                   dataset_size=1000, world_sizes=(1, 2, 3)),
    passing=folder(("train.py", _lightning_train(", use_distributed_sampler=False")), _BUCKET_SAMPLER,
                   lint=("train.py",), dataset_size=1000, world_sizes=(1, 2, 3)),
    fix="""Pass `use_distributed_sampler=False` to the `Trainer` (Lightning 1.x: `replace_sampler_ddp=False`) so
    the project's sampler alone shards the data, or drop the project's rank sharding and let Lightning do it.""",
)

FLOAT_BATCH_SIZE = Rule(
    "DS801", "float-batch-size", ERROR,
    summary="A batch size computed with true division reaches a DataLoader or a config's batch key",
    what="""Reports a batch size computed with true division `/` (a float, even when floor division `//`
    follows: `28 / 2 // 2` is `7.0`) that is passed to `DataLoader(batch_size=...)`, a `BatchSampler` or a
    sampler class of the project, or written into a configuration's batch key (`data["train"]["batch_size"] =
    ...`, `hps.train.batch_size = ...`, `{"batch_size": ...}`). The evidence line is the division.""",
    why="""`DataLoader` raises `ValueError: batch_size should be a positive integer value, but got
    batch_size=7.0` when it is built; a `7.0` written into a training config reaches a bucket sampler that
    multiplies a list by it: `TypeError: can't multiply sequence by non-int of type 'float'`.""",
    fails_in=(INITIALIZE, STEP),
    failing=folder(("webui.py", """
        import json

        import psutil


        def write_config(path):
            ram_gb = psutil.virtual_memory().total / 1024 ** 3
            with open(path) as handle:
                data = json.load(handle)
            data["train"]["batch_size"] = ram_gb / 2 // 2
            with open(path, "w") as handle:
                json.dump(data, handle)
        """), lint=("webui.py",)),
    passing=folder(("webui.py", """
        import json

        import psutil


        def write_config(path):
            ram_gb = psutil.virtual_memory().total / 1024 ** 3
            with open(path) as handle:
                data = json.load(handle)
            data["train"]["batch_size"] = max(1, int(ram_gb // 4))
            with open(path, "w") as handle:
                json.dump(data, handle)
        """), lint=("webui.py",)),
    fix="""Make it an integer where it is computed: `int(total / n)`, or `//` on integers (`int(ram_gb) // 4`).""",
)

_JAX_LOADER = ("data_loader.py", """
    import jax
    import torch


    class ShardedLoader:
        def __init__(self, dataset, local_batch_size, num_batches=None):
            self._sharding = jax.sharding.NamedSharding(
                jax.sharding.Mesh(jax.devices(), ("batch",)), jax.sharding.PartitionSpec("batch"))
            self._loader = torch.utils.data.DataLoader(dataset, batch_size=local_batch_size, drop_last=True)
            self._num_batches = num_batches

        def __iter__(self):
            for batch in self._loader:
                yield jax.tree.map(lambda x: jax.make_array_from_process_local_data(self._sharding, x), batch)
    """)


def _norm_stats(batch: int) -> str:
    return f"""
        import numpy as np

        import data_loader


        def compute_norm_stats(dataset):
            loader = data_loader.ShardedLoader(dataset, local_batch_size={batch}, num_batches=len(dataset))
            states = [np.asarray(batch["state"]) for batch in loader]
            return np.mean(states, axis=0), np.std(states, axis=0)
        """


BATCH_INDIVISIBLE_DEVICES = Rule(
    "DS802", "batch-indivisible-devices", ERROR,
    summary="A literal batch size that a JAX loader cannot split over the devices",
    what="""With `--world-size`, reports a literal batch size given to a loader that splits every batch over
    all devices (`jax.make_array_from_process_local_data` or `jax.device_put` with a sharding,
    `flax.jax_utils.shard`, `jax.device_put_sharded`, `jax.pmap`) when it is not a multiple of the device
    count, and, when the model has BatchNorm layers (found in the scripts, or `--batchnorm`), one that leaves a
    single sample per device. It suggests the nearest batch sizes that divide.""",
    why="""JAX raises a `ValueError` as the first batch is sharded (the batch dimension must be divisible by
    the number of devices). With one sample per device a BatchNorm layer has no batch statistics: PyTorch
    raises `ValueError: Expected more than 1 value per channel when training`.""",
    fails_in=(STEP,),
    failing=folder(("compute_norm_stats.py", _norm_stats(1)), _JAX_LOADER, lint=("compute_norm_stats.py",),
                   world_sizes=(2,)),
    passing=folder(("compute_norm_stats.py", _norm_stats(2)), _JAX_LOADER, lint=("compute_norm_stats.py",),
                   world_sizes=(2,)),
    fix="""Use a batch size that is a multiple of the device count (at least 2 per device with BatchNorm), or
    read it from the configuration the training run uses.""",
)

def _offload_train(optimizer: str, import_line: str) -> str:
    return f"""
        import lightning as L
        import torch
        {import_line}


        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(32, 2)

            def configure_optimizers(self):
                return {optimizer}(self.parameters(), lr=1e-4)


        def main(data):
            trainer = L.Trainer(accelerator="gpu", devices=4, strategy="deepspeed_stage_2_offload", precision="16-mixed")
            trainer.fit(Model(), data)
        """


LIGHTNING_OFFLOAD_TORCH_OPTIMIZER = Rule(
    "DS803", "lightning-offload-torch-optimizer", ERROR,
    summary="A Lightning DeepSpeed offload strategy with a torch optimizer from configure_optimizers",
    what="""Reports a Lightning `Trainer` whose strategy offloads the optimizer (`deepspeed_stage_2_offload`,
    `deepspeed_stage_3_offload`, `deepspeed_stage_3_offload_nvme`, or `DeepSpeedStrategy(offload_optimizer=True)`
    without a config of its own) in a script whose LightningModules (in the script or the files it imports) build
    a `torch.optim` optimizer in `configure_optimizers`, and none of them mentions DeepSpeedCPUAdam or
    DeepSpeedCPULion. The evidence line names the optimizer.""",
    why="""Lightning hands the module's optimizer to `deepspeed.initialize`, and its offload strategies write no
    `zero_force_ds_cpu_optimizer`, which DeepSpeed defaults to true: the engine raises `ZeRORuntimeException: You
    are using ZeRO-Offload with a client provided optimizer (<class 'torch.optim.adamw.AdamW'>) which in most
    cases will yield poor performance. Please either use deepspeed.ops.adam.DeepSpeedCPUAdam or set an optimizer
    in your ds-config` before the first step.""",
    fails_in=(INITIALIZE,),
    failing=folder(("train.py", _offload_train("torch.optim.AdamW", "")), lint=("train.py",)),
    passing=folder(("train.py", _offload_train("DeepSpeedCPUAdam", "from deepspeed.ops.adam import DeepSpeedCPUAdam")),
                   lint=("train.py",)),
    fix="""Build `deepspeed.ops.adam.DeepSpeedCPUAdam` in `configure_optimizers`, or use a strategy without
    optimizer offload, or give DeepSpeedStrategy a config with `"zero_force_ds_cpu_optimizer": false` (the torch
    optimizer then steps on the CPU, slowly).""",
)

RULES = (LIGHTNING_SHARDED_TWICE, FLOAT_BATCH_SIZE, BATCH_INDIVISIBLE_DEVICES, LIGHTNING_OFFLOAD_TORCH_OPTIMIZER)
