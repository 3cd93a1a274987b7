// The API reference page (/docs): one Swagger UI per contract, each on the OpenAPI document this server serves.
// A file of its own (no inline script), so the page's Content-Security-Policy needs no 'unsafe-inline'.
"use strict";

window.addEventListener("DOMContentLoaded", () => {
  for (const section of document.querySelectorAll("section.contract")) {
    // relative to the page: right also where the application is mounted under a prefix
    const url = new URL(section.dataset.document, document.baseURI).href;
    SwaggerUIBundle({
      url,
      domNode: section,
      presets: [SwaggerUIBundle.presets.apis],
      layout: "BaseLayout",
      deepLinking: false,
      validatorUrl: null, // nothing leaves this server
      tryItOutEnabled: false,
    });
  }
});
