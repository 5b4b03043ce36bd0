"""A model from its config.json: every table model round-trips, models outside the table match their
publishers' counts, aliases resolve, and a config the library cannot read is refused naming the field."""

import json
import math
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import roofline as rl
from roofline import data
from roofline.apps.cli import main
from roofline.errors import DataTableError, ModelConfigError
from roofline.model_config import row_from_config
from roofline.physics.precision import default_weight_precision

CONFIGS = data.table_path("model_configs")
SOURCES = tomllib.loads((CONFIGS / "sources.toml").read_text())["config"]
TABLE_IDS = list(data.load_models())
OUTSIDE = {s["file"].removesuffix(".json"): s for s in SOURCES if "published_parameters" in s}


@pytest.fixture(autouse=True)
def _forget_added_models():
    yield
    data.ADDED_MODELS.clear()
    data.clear_cache()


def table_config(model_id: str) -> dict:
    return json.loads((CONFIGS / f"{model_id}.json").read_text())


def test_every_table_model_and_outside_model_has_a_sourced_config():
    files = {s["file"] for s in SOURCES}
    assert {f"{m}.json" for m in TABLE_IDS} | {f"{m}.json" for m in OUTSIDE} == files
    assert all(s["url"].startswith("https://huggingface.co/") and s["found_in"] for s in SOURCES)


@pytest.mark.parametrize("model_id", TABLE_IDS)
def test_a_table_model_round_trips_through_its_config(model_id):
    row = data.get_model(model_id)
    built = data.model_from_config(table_config(model_id), model_id=model_id)
    assert data.same_architecture(row, built), {
        f: (getattr(row, f), getattr(built, f))
        for f in row.__dataclass_fields__
        if getattr(row, f) != getattr(built, f)
    }
    assert rl.parameter_count(built) == rl.parameter_count(row)
    assert rl.active_parameter_count(built) == rl.active_parameter_count(row)
    release = default_weight_precision(row)
    assert rl.weight_bytes(built, release) == rl.weight_bytes(row, release)
    for context in (1, 4096, 100_000):
        assert rl.sequence_kv_bytes(built, context) == rl.sequence_kv_bytes(row, context)


@pytest.mark.parametrize("model_id", sorted(OUTSIDE))
def test_a_model_outside_the_table_matches_its_published_count(model_id):
    model = rl.get_model(str(CONFIGS / f"{model_id}.json"))
    published = OUTSIDE[model_id]["published_parameters"]
    tolerance = max(0.01 * published, OUTSIDE[model_id].get("published_rounding", 0.0))
    assert model.id == model_id and model_id not in data.load_models()
    assert abs(rl.parameter_count(model) - published) <= tolerance


def test_a_hand_derived_count_for_llama_3_2_3b():
    # 28 layers of attention (3072*(24+8+8)*128 + 24*128*3072) and SwiGLU MLP (3*3072*8192), two norms each,
    # one final norm, and a 128256 x 3072 embedding tied to the LM head.
    attention = 3072 * (24 + 2 * 8) * 128 + 24 * 128 * 3072
    per_layer = attention + 3 * 3072 * 8192 + 2 * 3072
    expected = 28 * per_layer + 3072 + 128256 * 3072
    assert rl.parameter_count(rl.get_model(str(CONFIGS / "llama-3.2-3b.json"))) == expected


def test_a_hand_derived_count_for_minimax_m2_5():
    # 62 layers: attention 3072 x 48*128 for q and o, 3072 x 8*128 for k and v, per-head q/k norms (256);
    # 256 SwiGLU experts of width 1536, a 3072 x 256 router with one bias per expert, two norms. Untied
    # 200064-token embedding and LM head, a final norm. Active: 8 of the 256 experts.
    attention = 2 * 3072 * 48 * 128 + 2 * 3072 * 8 * 128 + 2 * 128
    expert = 3 * 3072 * 1536
    shared_per_layer = attention + 3072 * 256 + 256 + 2 * 3072
    model = rl.get_model(str(CONFIGS / "minimax-m2.5.json"))
    embeddings = 2 * 200064 * 3072 + 3072
    assert rl.parameter_count(model) == 62 * (shared_per_layer + 256 * expert) + embeddings
    assert rl.active_parameter_count(model) == 62 * (shared_per_layer + 8 * expert) + embeddings
    # Grouped-query attention with 8 KV heads: 2 (K and V) x 62 layers x 8 x 128 x 2 bytes per token.
    assert rl.kv_bytes_per_token(model) == 2 * 62 * 8 * 128 * 2


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("deepseek-r1", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
        ("Llama-3-8B-Instruct", "llama-3-8b"),
        ("meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"),
        ("qwen2.5-7b-instruct", "qwen2.5-7b"),
        ("Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("llama-2-7b-chat-hf", "llama-2-7b"),
    ],
)
def test_aliases_resolve_to_their_row(name, model_id):
    assert rl.get_model(name).id == model_id


def test_the_cli_takes_an_alias_and_a_config_path(tmp_path, capsys):
    assert (
        main(
            [
                "generate",
                "--model",
                "deepseek-r1",
                "--gpu",
                "h200",
                "--gpus",
                "8",
                "--batch",
                "1",
                "--input",
                "100",
                "--output",
                "10",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["model"] == "deepseek-v3"
    folder = tmp_path / "My-Model"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "qwen2.5-14b.json").read_text())
    assert main(["step", "--model", str(folder), "--gpu", "h100-sxm", "--json"]) == 0
    step = json.loads(capsys.readouterr().out)
    assert step["model_id"] == "my-model"
    qwen = rl.get_model(str(CONFIGS / "qwen2.5-14b.json"))
    assert step["weight_bytes_read"] == float(rl.weight_bytes_read(qwen, "bf16", 1))


def test_a_config_under_a_table_id_gives_the_row_or_is_refused(tmp_path):
    same = tmp_path / "llama-3-8b.json"
    same.write_text(json.dumps(table_config("llama-3-8b")))
    assert rl.add_model(same) is data.get_model("llama-3-8b")
    other = tmp_path / "other" / "llama-3-8b.json"
    other.parent.mkdir()
    other.write_text(json.dumps(table_config("llama-3-8b") | {"num_hidden_layers": 30}))
    with pytest.raises(DataTableError, match="shape differs"):
        rl.add_model(other)


def test_configs_in_the_users_folder_join_every_model_menu(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPEED_PHYSICS_HOME", str(tmp_path))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "small.json").write_text((CONFIGS / "llama-3.2-3b.json").read_text())
    data.clear_cache()
    assert "small" in rl.models() and rl.get_model("small").layers == 28
    assert main(["list", "models", "--json"]) == 0 and main(["list", "models"]) == 0


BASE = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "max_position_embeddings": 512,
    "torch_dtype": "bfloat16",
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model_type": "mamba"}, "model_type"),
        ({"hidden_size": None}, "hidden_size"),
        ({"hidden_size": "4096"}, "hidden_size"),
        ({"num_hidden_layers": 2.5}, "num_hidden_layers"),
        ({"num_attention_heads": 0}, "num_attention_heads"),
        ({"num_attention_heads": 5}, "head_dim"),
        ({"mlp_bias": True}, "mlp_bias"),
        ({"torch_dtype": None}, "torch_dtype"),
        ({"quantization_config": {"quant_method": "awq", "bits": 4}}, "quantization_config"),
        ({"layer_types": ["full_attention", "linear_attention"]}, "layer_types"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ],
)
def test_a_config_it_cannot_read_names_the_field(change, field):
    with pytest.raises(ModelConfigError, match=f"field '{field}'"):
        row_from_config(BASE | change, "my/config.json")


def test_a_minimax_config_with_a_shared_expert_is_refused_by_name():
    config = json.loads((CONFIGS / "minimax-m2.5.json").read_text()) | {"shared_intermediate_size": 1536}
    with pytest.raises(ModelConfigError, match="field 'shared_intermediate_size'"):
        row_from_config(config, "minimax/config.json")


def test_a_shape_the_table_refuses_names_the_row_field():
    with pytest.raises(DataTableError, match="kv_heads"):
        data.model_from_config(BASE | {"num_key_value_heads": 3}, model_id="odd")


@pytest.mark.parametrize("text", [b"", b"{", b"[1, 2]", b"\xff\xfe", b'{"hidden_size": NaN}', b"[" * 100_000])
def test_a_file_that_is_not_a_config_is_refused(tmp_path, text):
    path = tmp_path / "config.json"
    path.write_bytes(text)
    with pytest.raises(ModelConfigError, match=str(path)):
        data.model_from_config(path)


def test_a_path_without_a_config_is_refused_by_name(tmp_path):
    with pytest.raises(ModelConfigError, match="cannot read a config.json"):
        rl.get_model(str(tmp_path / "nothing-here"))
    with pytest.raises(ModelConfigError, match="not a regular file"):
        data.model_from_config("/dev/null")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(TABLE_IDS),
    key=st.sampled_from(
        sorted(
            set(BASE)
            | {
                "head_dim",
                "num_experts",
                "num_local_experts",
                "n_routed_experts",
                "num_experts_per_tok",
                "kv_lora_rank",
                "sliding_window",
                "layer_types",
                "quantization_config",
                "moe_intermediate_size",
                "first_k_dense_replace",
            }
        )
    ),
    value=JSON_VALUES,
)
def test_a_mutated_config_is_read_or_refused_never_a_crash(base, key, value):
    config = table_config(base) | {key: value}
    try:
        model = data.model_from_config(config, model_id="fuzz")
    except (ModelConfigError, DataTableError):
        return
    assert rl.parameter_count(model) > 0 and math.isfinite(rl.weight_bytes(model, "bf16"))


def test_a_scenario_and_a_folder_of_configs_name_the_model_by_its_id(tmp_path):
    folder = tmp_path / "configs"
    (folder / "Qwen2.5-14B").mkdir(parents=True)
    (folder / "Qwen2.5-14B" / "config.json").write_text((CONFIGS / "qwen2.5-14b.json").read_text())
    (folder / "small.json").write_text((CONFIGS / "llama-3.2-3b.json").read_text())
    assert [m.id for m in rl.add_models(folder)] == ["qwen2.5-14b", "small"]
    scenario = rl.Scenario(model=str(folder / "small.json"))
    assert scenario.model == "small" and rl.Scenario(model="deepseek-ai/DeepSeek-R1").model == "deepseek-v3"
    with pytest.raises(ModelConfigError, match="no config.json"):
        rl.add_models(tmp_path / "empty")
