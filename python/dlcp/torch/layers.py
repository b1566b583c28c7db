"""Layer positions of a model's parameters, and the slices of a DDP bucket they give."""

import numbers


def layer_positions(module):
    """{id(parameter): layer} for every trainable parameter of `module`, and the number of layers.

    A layer is a module that owns parameters directly; layers are numbered in registration order,
    which for ordinary models is input to output (0 = nearest the input, the most urgent class).
    A parameter shared by several modules belongs to the first.
    """
    positions = {}
    layer = 0
    for submodule in module.modules():
        owned = [
            p
            for p in submodule.parameters(recurse=False)
            if p.requires_grad and id(p) not in positions
        ]
        if not owned:
            continue
        for parameter in owned:
            positions[id(parameter)] = layer
        layer += 1
    return positions, layer


def layer_budgets(loss_budget, num_layers):
    """One loss budget per layer from a number, a sequence (one per layer) or a function of
    (layer, num_layers). Raises ValueError naming the layer for a budget outside [0, 1]."""
    if isinstance(loss_budget, numbers.Real):
        budgets = [float(loss_budget)] * num_layers
    elif callable(loss_budget):
        budgets = [float(loss_budget(layer, num_layers)) for layer in range(num_layers)]
    else:
        budgets = [float(b) for b in loss_budget]
        if len(budgets) != num_layers:
            raise ValueError(
                f"loss_budget has {len(budgets)} entries but the model has {num_layers} layers"
            )
    for layer, budget in enumerate(budgets):
        if not 0.0 <= budget <= 1.0:
            raise ValueError(f"loss_budget of layer {layer} must be within [0, 1], got {budget}")
    return budgets


def bucket_slices(layers, numels, budgets):
    """[(offset, length, layer, budget)] for a bucket whose parameters, in buffer order, have
    these layers and sizes; neighbours of the same layer share one slice (one collective)."""
    if len(layers) != len(numels):
        raise ValueError("one layer per parameter is needed")
    slices = []
    offset = 0
    for layer, numel in zip(layers, numels):
        if numel == 0:
            continue
        if slices and slices[-1][2] == layer and slices[-1][0] + slices[-1][1] == offset:
            start, length, _, budget = slices[-1]
            slices[-1] = (start, length + numel, layer, budget)
        else:
            slices.append((offset, numel, layer, budgets[layer]))
        offset += numel
    return slices
