# lab: lab08
# call: check_part2(issue_breadth_first, seed=5)
# desc: right: pops the streams and xs lists
def issue_breadth_first(streams, xs, step_ns):
    pairs = []
    while streams:
        pairs.append((streams.pop(), xs.pop()))
    for s, x in pairs:
        step_a[1, 1, s](x, step_ns)
    for s, x in pairs:
        step_b[1, 1, s](x, step_ns)
