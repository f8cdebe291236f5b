"""Training projects written for these tests in the shapes real ones use (a VITS-style TTS project
with a Lightning data module and a bucket sampler, a webui that writes the training config, a JAX
robotics project whose loader shards every batch), each next to the correct version of itself."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return folder


# -- scenario 1: a Lightning TTS project whose bucket sampler already shards by rank --------------

BUCKET_SAMPLER = """
    import torch
    import torch.utils.data


    class DistributedBucketSampler(torch.utils.data.distributed.DistributedSampler):
        \"\"\"Batches of similar lengths; every rank takes its own slice of each bucket.\"\"\"

        def __init__(self, dataset, batch_size, boundaries, num_replicas=None, rank=None, shuffle=True):
            super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle)
            self.lengths = dataset.lengths
            self.batch_size = batch_size
            self.boundaries = boundaries

        def __iter__(self):
            ids = list(range(len(self.lengths)))[self.rank::self.num_replicas]
            return iter([ids[i:i + self.batch_size] for i in range(0, len(ids), self.batch_size)])
    """

DATA_MODULE = """
    import lightning.pytorch as pl
    from torch.utils.data import DataLoader

    from text.data_utils import DistributedBucketSampler, TextAudioCollate


    class TTSDataModule(pl.LightningDataModule):
        def __init__(self, hps, dataset):
            super().__init__()
            self.hps = hps
            self.dataset = dataset

        def train_dataloader(self):
            sampler = DistributedBucketSampler(
                self.dataset, self.hps.train.batch_size, [32, 300, 400, 500, 600, 700, 800, 900, 1000])
            return DataLoader(self.dataset, num_workers=4, collate_fn=TextAudioCollate(),
                              batch_sampler=sampler)
    """

COLLATE = """

    class TextAudioCollate:
        def __call__(self, batch):
            return batch
    """


def train_script(trainer_arguments: str = "", imports: str = "import lightning.pytorch as pl",
                 trainer: str = "pl.Trainer") -> str:
    return f"""
        {imports}

        from data_module import TTSDataModule
        from models import SynthesizerTrn
        import utils


        def main():
            hps = utils.get_hparams()
            model = SynthesizerTrn(hps)
            trainer = {trainer}(
                accelerator="gpu",
                devices=-1,
                max_epochs=hps.train.epochs,
                strategy="ddp"{trainer_arguments},
            )
            trainer.fit(model, TTSDataModule(hps, model.dataset))


        if __name__ == "__main__":
            main()
        """


def tts_project(trainer_arguments: str = "", **train) -> dict[str, str]:
    return {
        "train.py": train_script(trainer_arguments, **train),
        "data_module.py": DATA_MODULE,
        "text/__init__.py": "",
        "text/data_utils.py": BUCKET_SAMPLER + COLLATE,
        "models.py": """
            import torch.nn as nn


            class SynthesizerTrn(nn.Module):
                def __init__(self, hps):
                    super().__init__()
                    self.proj = nn.Conv1d(hps.model.hidden, hps.model.hidden, 1)
            """,
        "utils.py": """
            import yaml


            def get_hparams(path="configs/base.yaml"):
                with open(path) as handle:
                    return yaml.safe_load(handle)
            """,
    }


# GPT-SoVITS' stage 1 shape: a plain Sampler (not a DistributedSampler) that asks torch.distributed for
# the rank itself, given as `sampler=`; Lightning wraps it in a DistributedSamplerWrapper and shards again.
RANK_READING_SAMPLER = """
    import math

    import torch
    import torch.distributed as dist
    from torch.utils.data import Sampler


    class BucketSampler(Sampler):
        def __init__(self, dataset, num_replicas=None, rank=None, batch_size=32):
            if num_replicas is None:
                num_replicas = dist.get_world_size() if torch.cuda.is_available() else 1
            if rank is None:
                rank = dist.get_rank() if torch.cuda.is_available() else 0
            self.dataset = dataset
            self.num_replicas = num_replicas
            self.rank = rank
            self.batch_size = batch_size
            self.num_samples = math.ceil(len(dataset) / num_replicas)

        def __iter__(self):
            return iter(range(self.rank, len(self.dataset), self.num_replicas))

        def __len__(self):
            return self.num_samples
    """

SEMANTIC_DATA_MODULE = """
    from pytorch_lightning import LightningDataModule
    from torch.utils.data import DataLoader

    from AR.data.bucket_sampler import BucketSampler


    class SemanticDataModule(LightningDataModule):
        def __init__(self, config, dataset):
            super().__init__()
            self.config = config
            self.dataset = dataset

        def train_dataloader(self):
            batch_size = self.config["train"]["batch_size"]
            sampler = BucketSampler(self.dataset, batch_size=batch_size)
            return DataLoader(self.dataset, batch_size=batch_size, sampler=sampler, num_workers=4)
    """


def semantic_project(trainer_arguments: str = "") -> dict[str, str]:
    return {
        "s1_train.py": f"""
            from pytorch_lightning import Trainer

            from AR.data.data_module import SemanticDataModule


            def main(config, model, dataset):
                trainer: Trainer = Trainer(
                    max_epochs=config["train"]["epochs"],
                    accelerator="gpu",
                    devices=-1,
                    precision=config["train"]["precision"]{trainer_arguments},
                )
                trainer.fit(model, SemanticDataModule(config, dataset))
            """,
        "AR/__init__.py": "",
        "AR/data/__init__.py": "",
        "AR/data/data_module.py": SEMANTIC_DATA_MODULE,
        "AR/data/bucket_sampler.py": RANK_READING_SAMPLER,
    }


# Correct scripts of the same shapes.

LIGHTNING_PLAIN = """
    import lightning as L
    from torch.utils.data import DataLoader


    class Data(L.LightningDataModule):
        def __init__(self, dataset):
            super().__init__()
            self.dataset = dataset

        def train_dataloader(self):
            return DataLoader(self.dataset, batch_size=8, shuffle=True, num_workers=4)


    def main(model, dataset):
        L.Trainer(accelerator="gpu", devices=4, strategy="ddp").fit(model, Data(dataset))
    """

LIGHTNING_OWN_DISTRIBUTED_SAMPLER = """
    import lightning as L
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler


    class Data(L.LightningDataModule):
        def __init__(self, dataset):
            super().__init__()
            self.dataset = dataset

        def train_dataloader(self):
            # Lightning sees a DistributedSampler here and leaves it alone
            sampler = DistributedSampler(self.dataset, shuffle=True)
            return DataLoader(self.dataset, batch_size=8, sampler=sampler)


    def main(model, dataset):
        L.Trainer(accelerator="gpu", devices=4).fit(model, Data(dataset))
    """

TORCHRUN_DISTRIBUTED = """
    import torch
    import torch.distributed as dist
    from torch.utils.data import DataLoader
    from torch.utils.data.distributed import DistributedSampler

    from text.data_utils import DistributedBucketSampler


    def run(rank, world_size, hps, dataset):
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
        sampler = DistributedBucketSampler(dataset, hps.train.batch_size, [32, 300, 1000],
                                           num_replicas=world_size, rank=rank)
        loader = DataLoader(dataset, batch_sampler=sampler, num_workers=4)
        eval_loader = DataLoader(dataset, batch_size=1, sampler=DistributedSampler(dataset))
        for batch in loader:
            pass
    """

HF_TRAINER = """
    from torch.utils.data import DataLoader
    from transformers import Trainer

    from text.data_utils import DistributedBucketSampler


    class BucketTrainer(Trainer):
        def get_train_dataloader(self):
            sampler = DistributedBucketSampler(self.train_dataset, 8, [32, 300, 1000])
            return DataLoader(self.train_dataset, batch_sampler=sampler)


    def main(model, args, dataset):
        Trainer(model=model, args=args, train_dataset=dataset).train()
    """


# -- scenario 3: a webui that writes the batch size into the training configs ------------------

WEBUI_FLOAT = """
    import json

    import psutil
    import yaml

    # on the CPU: half the RAM in GB, halved again
    default_batch_size = psutil.virtual_memory().total / 1024 / 1024 / 1024 / 2 // 2


    def open_s2_training(exp_name):
        with open("configs/s2.json") as handle:
            data = json.load(handle)
        data["train"]["batch_size"] = default_batch_size
        data["name"] = exp_name
        with open("TEMP/tmp_s2.json", "w") as handle:
            json.dump(data, handle)


    def open_s1_training(exp_name):
        with open("configs/s1.yaml") as handle:
            data = yaml.safe_load(handle)
        data["train"]["batch_size"] = default_batch_size
        with open("TEMP/tmp_s1.yaml", "w") as handle:
            yaml.dump(data, handle)
    """

WEBUI_INT = """
    import json

    import psutil

    default_batch_size = int(psutil.virtual_memory().total / 1024 / 1024 / 1024 / 2 // 2)
    default_batch_size = max(1, default_batch_size)


    def open_s2_training(exp_name, batch_size, is_half):
        with open("configs/s2.json") as handle:
            data = json.load(handle)
        if not is_half:
            batch_size = max(1, batch_size // 2)
        data["train"]["batch_size"] = batch_size
        data["train"]["fp16_run"] = is_half
        data["train"]["lr"] = 2e-4 * batch_size / 32
        with open("TEMP/tmp_s2.json", "w") as handle:
            json.dump(data, handle)
    """


# -- scenario 4: a JAX robotics project whose loader shards every batch over all devices --------

JAX_DATA_LOADER = """
    import jax
    import numpy as np
    import torch


    class TorchDataLoader:
        def __init__(self, dataset, local_batch_size, *, sharding=None, shuffle=False, num_batches=None):
            if sharding is None:
                sharding = jax.sharding.NamedSharding(
                    jax.sharding.Mesh(jax.devices(), ("B",)), jax.sharding.PartitionSpec("B"))
            self._sharding = sharding
            self._num_batches = num_batches
            self._loader = torch.utils.data.DataLoader(dataset, batch_size=local_batch_size, shuffle=shuffle,
                                                       drop_last=True)

        def __iter__(self):
            for batch in self._loader:
                yield jax.tree.map(lambda x: jax.make_array_from_process_local_data(self._sharding, x), batch)


    def create_data_loader(config, *, batch_size=None, num_batches=None):
        dataset = config.dataset()
        return TorchDataLoader(dataset, batch_size or config.batch_size, num_batches=num_batches)
    """

NORM_STATS = """
    import numpy as np
    import tyro

    import openpi_lite.training.config as _config
    import openpi_lite.training.data_loader as _data_loader


    def main(config_name: str):
        config = _config.get_config(config_name)
        data_loader = _data_loader.TorchDataLoader(config.dataset(), local_batch_size={batch}, num_batches=100)
        stats = [np.asarray(batch["state"]) for batch in data_loader]
        print(np.mean(stats, axis=0))


    if __name__ == "__main__":
        tyro.cli(main)
    """

JAX_CONFIG = """
    import dataclasses


    @dataclasses.dataclass(frozen=True)
    class TrainConfig:
        name: str
        batch_size: int = 32
        num_workers: int = 2

        def dataset(self):
            return list(range(1000))


    def get_config(name):
        return TrainConfig(name=name)
    """


def jax_project(batch: int | str = 1, model: str = "") -> dict[str, str]:
    files = {
        "scripts/compute_norm_stats.py": NORM_STATS.replace("{batch}", str(batch)),
        "openpi_lite/__init__.py": "",
        "openpi_lite/training/__init__.py": "",
        "openpi_lite/training/data_loader.py": JAX_DATA_LOADER,
        "openpi_lite/training/config.py": JAX_CONFIG,
    }
    if model:
        files["openpi_lite/models/policy.py"] = model
    return files


TORCH_BATCHNORM_MODEL = """
    import torch.nn as nn


    class StateEncoder(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.norm = nn.BatchNorm1d(width)
            self.proj = nn.Linear(width, width)
    """
