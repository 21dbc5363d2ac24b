// Filter forms marked data-drop-empty send only the fields that hold a value, so the URL an
// operator bookmarks or shares reads "?q=alpha&sort=-read", not a row of empty parameters.
document.addEventListener("htmx:configRequest", (event) => {
  const form = event.detail.elt.closest ? event.detail.elt.closest("form[data-drop-empty]") : null;
  if (!form || event.detail.verb !== "get") return;
  const parameters = event.detail.parameters;
  const names = parameters instanceof FormData ? Array.from(new Set(parameters.keys())) : Object.keys(parameters);
  for (const name of names) {
    const value = parameters instanceof FormData ? parameters.get(name) : parameters[name];
    if (value === "" || value === null) {
      if (parameters instanceof FormData) parameters.delete(name);
      else delete parameters[name];
    }
  }
});
