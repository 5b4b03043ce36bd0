// Speed Physics instructor mode: take the token out of the address bar (a projector shows it to the room).
// After the page's first load its login cookie authenticates the page, its kernel, reloads and links.
// Inlined by the lesson template (index.html.j2) and the start page (roofline.apps.instructor_server).
(function stripToken() {
  var params = new URLSearchParams(window.location.search);
  if (!params.has("token")) { return; }
  params.delete("token");
  var rest = params.toString();
  window.history.replaceState(null, "", window.location.pathname + (rest ? "?" + rest : "") + window.location.hash);
})();
