"""What a screen reader needs from an explorer that ipywidgets cannot say from Python: a small script.

``Explorer`` shows it with itself (it installs itself once per page). It sets on every slider inside an
explorer ``aria-valuetext`` to the value its readout shows (a slider over round stops would read "8", its
stop's index, for 32 users) and ``aria-label`` to its name, names each number box, copies each figure's
description (also in the page as visually hidden text) into the image's ``alt``, and scrolls an explorer
into view when a set-up button asks to. It re-applies itself when the page changes, at most once per frame.
A front end that does not run scripts still shows every control, and the hidden description.
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
