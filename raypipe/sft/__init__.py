"""Fine-tuning datasets: validate, clean, deduplicate and convert instruction, chat and
preference data (JSONL), and report how it splits on length and style."""
