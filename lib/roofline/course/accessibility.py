"""What a screen reader needs from an explorer that ipywidgets cannot say from Python: a small script.

Used by every lesson's explorer (``roofline.ui.explorers``; the first is in notebooks/00_start_here.ipynb).
ipywidgets' sliders announce the position of their handle: a slider over round stops (1, 2, 4, … 32 users)
would read "8" for 32 users, its stop's index. The script, shown once with each explorer, sets on every
slider inside an explorer ``aria-valuetext`` to the value its readout shows ("32") and ``aria-label`` to its
name, gives each number box the name of its control, and copies each figure's description
(``roofline.views.plots.alt_text``, also in the page as visually hidden text beside it) into the image's
``alt``. It also scrolls an explorer's top into view when a "set up this question" button below it asks to
(``Explorer.bring_into_view``). It re-applies itself when the page changes (a slider moved, a figure
redrawn), at most once per animation frame, and installs itself once per page.

Outputs produced by a running kernel are trusted, so JupyterLab runs the script; a front end that does not
run scripts still shows every control and figure, and a screen reader still reads the hidden description.

>>> "aria-valuetext" in ACCESSIBILITY_JS and accessibility_script().data == ACCESSIBILITY_JS
True
"""

from __future__ import annotations

ACCESSIBILITY_JS = """
(function () {
  if (window.rooflineAccessibility) { window.rooflineAccessibility(); return; }
  function name(el) { return el ? el.textContent.trim() : ''; }
  function apply() {
    document.querySelectorAll('.roofline-explorer .widget-slider').forEach(function (slider) {
      var handle = slider.querySelector('.noUi-handle');
      if (!handle) return;
      var number = slider.closest('.roofline-number');
      var label = number ? number.querySelector('.roofline-number-label')
                         : slider.querySelector('.widget-label');
      var value = name(slider.querySelector('.widget-readout'));
      if (value && handle.getAttribute('aria-valuetext') !== value) {
        handle.setAttribute('aria-valuetext', value);
      }
      if (name(label) && handle.getAttribute('aria-label') !== name(label)) {
        handle.setAttribute('aria-label', name(label));
      }
    });
    document.querySelectorAll('.roofline-explorer .roofline-number').forEach(function (number) {
      var box = number.querySelector('input');
      var label = name(number.querySelector('.roofline-number-label'));
      if (box && label && box.getAttribute('aria-label') !== label) box.setAttribute('aria-label', label);
    });
    document.querySelectorAll('.roofline-explorer').forEach(function (explorer) {
      var img = explorer.querySelector('img.roofline-figure');
      var text = name(explorer.querySelector('.roofline-alt-text'));
      if (img && text && img.getAttribute('alt') !== text) img.setAttribute('alt', text);
    });
  }
  function scrollRequests() {
    document.querySelectorAll('.roofline-explorer .roofline-scroll-request').forEach(function (request) {
      if (request.dataset.done) return;
      request.dataset.done = '1';
      request.closest('.roofline-explorer').scrollIntoView({block: 'start'});
    });
  }
  var queued = false;
  function later() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () { queued = false; apply(); scrollRequests(); });
  }
  window.rooflineAccessibility = apply;
  new MutationObserver(later).observe(document.body, {
    subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ['aria-valuenow', 'src', 'class']
  });
  apply();
})();
"""


def accessibility_script():
    """The script as a displayable object (``IPython.display.Javascript``); ``Explorer`` shows it with
    itself. Showing it twice is harmless: it installs itself once per page."""
    from IPython.display import Javascript

    return Javascript(ACCESSIBILITY_JS)
