"""What the trainer runs on: loading models, rollout engines (HF, vLLM), logprobs of sampled
tokens, image inputs, processes and sharding, memory plans. No algorithm lives here."""
