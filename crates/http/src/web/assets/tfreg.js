// Copy buttons: each button[data-copy] copies the text of the element it names. Without
// JavaScript the buttons stay hidden and the blocks are selectable as they are.
document.querySelectorAll("button[data-copy]").forEach(function (button) {
  var target = document.getElementById(button.getAttribute("data-copy"));
  if (!target || !navigator.clipboard) return;
  button.hidden = false;
  button.addEventListener("click", function () {
    navigator.clipboard.writeText(target.textContent).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 2000);
    });
  });
});
