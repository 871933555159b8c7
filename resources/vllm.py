"""Dagster resource for the vLLM servers: thin wiring over `verilearn_assets.core.llm`.

Reads `configs/vllm.yaml` (or `config_dir`). With `launch: true` it starts and owns a local
server for the run (setup) and stops it afterwards (teardown); assets get a fresh
`VllmClient` per event loop from `client()`, or run a batch synchronously with `chat_batch`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr

from verilearn_assets.core.llm.client import ChatResult, VllmClient
from verilearn_assets.core.llm.config import VllmConfig, load_vllm_config
from verilearn_assets.core.llm.launcher import VllmServer, server_from_config


class VllmResource(ConfigurableResource):
    """OpenAI-compatible vLLM server(s) described by `configs/vllm.yaml`."""

    config_dir: str | None = None

    _cfg: VllmConfig | None = PrivateAttr(default=None)
    _server: VllmServer | None = PrivateAttr(default=None)
    _log: object = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # Launching is lazy (see `client`): a run that never talks to a model — every
        # template/procedural partition with the program teacher — must not pay for a
        # server start.
        self._cfg = load_vllm_config(self.config_dir)
        self._log = context.log

    def _ensure_server(self) -> VllmConfig:
        cfg = self.vllm_config
        if cfg.launch and self._server is None:
            server = server_from_config(cfg.server, cfg.model)
            url = server.start()
            try:
                seconds = server.wait_healthy()
            except BaseException:
                server.stop()
                raise
            if self._log:
                self._log.info(f"launched vLLM at {url} in {seconds:.1f}s ({server.log_path})")
            self._server = server
            self._cfg = cfg = cfg.model_copy(update={"base_urls": [*cfg.base_urls, url]})
        return cfg

    @property
    def configured(self) -> bool:
        """True when a server is reachable by config: listed base URLs or `launch: true`."""
        return self.vllm_config.has_server

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    @property
    def vllm_config(self) -> VllmConfig:
        if self._cfg is None:
            self._cfg = load_vllm_config(self.config_dir)
        return self._cfg

    def served_config(self) -> VllmConfig:
        """The config with every server a client may use: with `launch: true`, the owned
        server is started here and its URL added (`vllm_config` alone lists only base_urls,
        so a teacher built from it would find no server)."""
        return self._ensure_server()

    def client(self) -> VllmClient:
        """A new client (launching the owned server first when `launch: true`);
        `await client.start()` in the loop that will use it."""
        return VllmClient(self.served_config())

    def chat_batch(
        self,
        conversations: list[list[dict[str, Any]]],
        seeds: list[int | None] | None = None,
        **sampling: Any,
    ) -> tuple[list[ChatResult], dict[str, Any]]:
        """Run many chats concurrently (under the configured caps); return results and stats."""
        seeds = seeds if seeds is not None else [None] * len(conversations)
        if len(seeds) != len(conversations):
            raise ValueError(f"{len(seeds)} seeds for {len(conversations)} conversations")

        async def run() -> tuple[list[ChatResult], dict[str, Any]]:
            async with self.client() as client:
                results = await asyncio.gather(
                    *(
                        client.chat(messages, seed=seed, **sampling)
                        for messages, seed in zip(conversations, seeds, strict=True)
                    )
                )
                return list(results), client.stats()

        return asyncio.run(run())
