// Keyboard rating on the item page (the page works without it): a level's key selects it and saves,
// B goes back, S skips, F opens the flag box. Keys typed into a text field are left alone.
(function () {
  var form = document.getElementById("rate-form");
  if (!form) return;
  function submitWith(action) {
    var b = form.querySelector('button[name="action"][value="' + action + '"]');
    if (form.requestSubmit && b) form.requestSubmit(b); else if (b) b.click();
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type !== "radio"))) return;
    var radio = form.querySelector('input[name="score"][data-key="' + e.key + '"]');
    if (radio) { radio.checked = true; e.preventDefault(); submitWith("rate"); return; }
    var k = e.key.toLowerCase();
    if (k === "b") { var back = document.getElementById("back"); if (back) { e.preventDefault(); back.click(); } }
    else if (k === "s") { e.preventDefault(); submitWith("skip"); }
    else if (k === "f") {
      e.preventDefault();
      var d = document.querySelector("details.flag"); d.open = true; d.querySelector('input[name="reason"]').focus();
    }
  });
})();
