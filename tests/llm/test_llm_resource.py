"""The Dagster resource: real materializations against the session's vLLM server."""

from pathlib import Path

import httpx
import pytest
import yaml
from dagster import AssetExecutionContext, asset, materialize

from resources.vllm import VllmResource
from verilearn_assets.core.llm.launcher import VllmEnvironmentMissing

pytestmark = pytest.mark.vllm


def write_config(directory: Path, data: dict) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vllm.yaml").write_text(yaml.safe_dump(data))
    return str(directory)


@asset
def greetings(context: AssetExecutionContext, vllm: VllmResource) -> list[str]:
    # The first and last conversations are identical and share a seed.
    conversations = [[{"role": "user", "content": f"Say hello #{i % 2}"}] for i in range(3)]
    results, stats = vllm.chat_batch(conversations, seeds=[1, 2, 1], max_tokens=5)
    context.add_output_metadata({"completion_tokens": stats["completion_tokens"]})
    return [r.text for r in results]


def test_asset_chats_through_the_resource(vllm_server, tmp_path: Path) -> None:
    cfg_dir = write_config(
        tmp_path / "cfg",
        {
            "base_urls": [vllm_server.base_url],
            "model": vllm_server.model,
            "launch": False,
            "sampling": {"temperature": 1.0},
        },
    )
    result = materialize([greetings], resources={"vllm": VllmResource(config_dir=cfg_dir)})
    assert result.success
    texts = result.output_for_node("greetings")
    assert len(texts) == 3 and all(texts)
    assert texts[0] == texts[2]  # same prompt and seed: same text
    meta = result.asset_materializations_for_node("greetings")[0].metadata
    assert meta["completion_tokens"].value >= 3


def test_launch_without_vllm_environment_fails_naming_the_python(tmp_path: Path) -> None:
    missing = tmp_path / "no-venv" / "bin" / "python"
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    cfg_dir = write_config(
        tmp_path / "cfg",
        {
            "model": "m",
            "launch": True,
            "server": {"model_path": str(model), "python": str(missing)},
        },
    )
    # the server is launched lazily, when the asset first asks for a client
    with pytest.raises(VllmEnvironmentMissing) as err:
        materialize([greetings], resources={"vllm": VllmResource(config_dir=cfg_dir)})
    assert str(missing) in str(err.value)


@asset
def owned_server_greeting(vllm: VllmResource) -> dict:
    # what a teacher built from the config sees (dafny): the owned server, launched on ask
    served = list(vllm.served_config().base_urls)
    (result,), _ = vllm.chat_batch([[{"role": "user", "content": "hi"}]], seeds=[3], max_tokens=4)
    return {"server": result.server, "text": result.text, "served": served}


def test_launch_true_starts_owns_and_stops_a_server(tiny_model_dir: Path, tmp_path: Path) -> None:
    """`launch: true`: the resource starts its own server for the run and stops it after."""
    cfg_dir = write_config(
        tmp_path / "cfg",
        {
            "model": "owned-tiny",
            "launch": True,
            "server": {"model_path": str(tiny_model_dir), "max_model_len": 512},
        },
    )
    result = materialize(
        [owned_server_greeting], resources={"vllm": VllmResource(config_dir=cfg_dir)}
    )
    assert result.success
    out = result.output_for_node("owned_server_greeting")
    assert out["text"] and out["server"].startswith("http://127.0.0.1:")
    assert out["served"] == [out["server"]]  # one owned server, launched once
    # teardown stopped the owned server: its port no longer answers
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{out['server']}/health", timeout=2)
