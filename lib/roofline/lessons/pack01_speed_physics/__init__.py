"""Pack 01 self-check: notebooks/pack01_speed_physics.ipynb.

The study card's seven questions, each from the lesson it belongs to (``cards``), judged by one judge
(``check``) and asked in a panel (``CardWidget``: boxes, Check, Reveal, Shuffle).

>>> w = CardWidget(card("Q7"), seed=0)
>>> w.enter("speedup_x", 1.25); w.enter("two_speedup_x", 6); w.enter("launch_ms", 0)
>>> print(w.press_check() and w.result_text())
launch overhead per step: 0 ms is wrong (not within ±5%); rework it or press Reveal
overhead as a share of the ideal step: no answer yet
overall speedup: 1.25× is right (the library gives 1.25×, ±5%)
ceiling if attention were free: no answer yet
follow-up: speedup of both: 6.00× is wrong, a known trap: multiplied the speedups. ...
"""

from roofline.course.card_widget import CardWidget
from roofline.course.cards import check
from roofline.lessons.pack01_speed_physics.cards import QIDS, card, shuffled_card
