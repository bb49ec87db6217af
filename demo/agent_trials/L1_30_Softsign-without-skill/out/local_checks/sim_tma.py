# Simulates the v3 per-CTA schedule (one CTA at a time) to check: each tile loaded once into the
# stage that the consumer reads, loaded before it is waited on, phase parity matches the number of
# completions of that stage's barrier, and a stage is refilled only after its previous tile was
# consumed and its store issued at least one group earlier.
import random
def sim(num_tiles, G, S):
    stored = []
    for b in range(min(G, num_tiles)):
        my = (num_tiles - b + G - 1) // G
        stage_tile = {}      # stage -> local tile index currently loaded
        completions = [0] * S
        consumed = set(); store_iter = {}
        for s in range(min(S, my)):
            stage_tile[s] = s; completions[s] += 1
        for i in range(my):
            s = i % S; parity = (i // S) & 1
            assert stage_tile.get(s) == i, (b, i, s, stage_tile)
            # try_wait.parity(p) succeeds once the phase with parity p completed: completions must be
            # exactly (i//S)+1 (the barrier has no later phase pending that could alias)
            assert completions[s] == i // S + 1, (i, s, completions)
            consumed.add(i); stored.append(b + i * G); store_iter[i] = i
            j = i - 1 + S
            if i >= 1 and j < my:
                sp = (i - 1) % S
                assert stage_tile[sp] == i - 1 and (i - 1) in consumed and store_iter[i - 1] == i - 1
                assert j % S == sp
                stage_tile[sp] = j; completions[sp] += 1
    assert sorted(stored) == list(range(num_tiles)), "coverage"
random.seed(0)
for _ in range(3000):
    S = random.choice([2, 3, 4, 5, 8]); G = random.randint(1, 40); nt = random.randint(0, 300)
    sim(nt, G, S)
print("schedule OK")
