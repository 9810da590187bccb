"""`raypipe ablate`: build each variant of a config, train the same small model on each at
equal tokens, and compare their bits per byte on held-out text (the FineWeb/DCLM method).

    variants  the config with stages turned off (variants.py), each a committed raypipe run
    vocab     one small BPE trained on the input, shared by every variant (vocab.py)
    train     one Ray task per (variant, seed): a GPT-2 of ~0.4M parameters on the variant's
              shards through raypipe.loader, then bits per byte on the held-out set (model.py)
    report    ablation.json and report.html: per variant the mean and spread over seeds, the
              gap to `raw` and to `recipe`, and the training-loss curves (report.py)

Each finished run and each trained (variant, seed) is kept, so a re-run resumes.
"""
