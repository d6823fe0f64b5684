/**
 * Two tiny built-in documents for `GET /api/health?deep=1`, so the check proves the engine end to end (Tesseract
 * workers, wasm and language data; pdf.js and its worker) without any input from outside. Production has neither
 * fonts nor pdf-lib, so both were made once and are kept as constants:
 *
 * - a PNG of "Health check OK" drawn with the committed tests/fixtures/fonts/LiberationSans-Regular.ttf
 *   (32 px, 273×58, 16-level greyscale, 1.2 kB), read by OCR;
 * - a one-page PDF (pdf-lib, Helvetica 12 pt, 0.9 kB) whose text layer says {@link HEALTH_SAMPLE_PDF_TEXT}.
 */
export const HEALTH_SAMPLE_PNG_TEXT = "Health check OK";

export const HEALTH_SAMPLE_PNG_BASE64 = [
  "iVBORw0KGgoAAAANSUhEUgAAAREAAAA6CAAAAACy4zITAAAETklEQVR42u2ZaZHsIBCA2wIWsIAFLMQCFrCABSxgAQtYwEJbmFck",
  "3CTZzc4e9aqaP7MhO9B89D3wojEOIAREhIgQESJCRIgIESEiRISIEBEiQkSIyOcHAuhxdVCf/GoAsE+324D/DhEPYLpHB+D+RyLo",
  "9SaY2IzHOmcAfH2wABJ/i4hzf00EDYMyhD0j4s6B/AwRBPhjIlECgDTOO5P+2nAhcgXkZ4j4vyaCAmAL5TyyHr4R8QAy/p4fsX9N",
  "ZAPQTQFwK9ZciVwDeUYkGMnFZkLbyynBuCwzBxGVzRcPIul/uDTr/tFu7cVOBO3GxWbrWaJJ/6F9J5uWXCiHIxEUwMN4gsEiIgeI",
  "PZHAQMT3Yw2Wo9aAEsQ4c0JEpwtKYxB5V6Ti+mwm4spysln9MYobiHmtfL+FCG7AhtVVH1LySqYjcgfkAZFd9wJi0AVAQm8jRi/y",
  "sYrVbM1qtBIuxqAA5LiLA9h8jE4e3006ItJEsnpTjrF5xFijJKZXIQYDILARQQVsAIAM2Og0Y97+IBL4DZAHRGy19KJ7pmoPz7Kt",
  "RJgsGg5xkvq4eRS7+AGA6fJGZK1Ro0DVC2RRMhE9a0RY3ZfYVfZYId4CuSCiXBv6ODfyesvIjh2dVvkq9HHeEyJFWAswKLbt3qQb",
  "TkSw6jy2j2YeCeKr3ICs02bx/NOV5jVDJhLFTPAzRKbhpmCggE0+4djwhAhvi/opGpTzYr5X3Yw+Nuxt+U6CzrPaNUi5dUpXIlZ0",
  "juktIsl4MA8zmcANka0tOtwkm/xKd9xj9YSo7Hd82c13m4icnP6eCIDUc7HxNT9iR0iHCXijJGsTJ0TUORFsrK6J9MPu82Em4gE4",
  "fnCAbDUxE9GYnsz7RMwooc/RJ8VVztkXiKh7IpOmmlMiwODkvuOM+/Xi1bPaHLTcd+hIWDNDdRSW9gtEPrYauzir2WoAjDo5HG9O",
  "amRUolXKG8K7RBYr3mPSh37kgsiLTxn4QiQumr2UE1uaSNE7rl7DzTDtnMXzd7P4sEjY3Zl6TKTFGgwhnhBZfG8vQQyhRt+wFrEh",
  "p3BdFn+EdtNnA+el74MMTbRdfMhGGapSPiVi6/Ox/kpENcUOu20iP1K3XRbeMjS7uhI1BNjk7+zcDdBXMfhRzpqnA9tFqEEuSpld",
  "bZatJlfXRLCUFihLzjoRCVVklDUHN0Uk09U1qytJ3QBZecoqRt8x2i5i8LO6RqW6xuTDRAC+1x1cpbwZsRJJou+2cE0kLStcDH1d",
  "MxJJn9JHjK4kmSlE6LWu2UvfySnsNWHrGKm1Y7RTs99V++bWQklRFKbVU+GfiYQSoG+IrLXvTKQFfO5va9+0+GwBaHnrKrrTPmsK",
  "OO4b+iN9vyJowYTa62vFhW19Vp/6HOGeyEl/ZCKy90dYbYfk/ghb+yPNnp50npNMLNDvNfQLFhEhIkSEiBARIkJEiAgRISJEhIgQ",
  "ESJCCIgIESEiROSbxz8JBysLmKfx9wAAAABJRU5ErkJggg==",
].join("");

export const HEALTH_SAMPLE_PDF_TEXT = "Health check OK: this page is read from its text layer.";

export const HEALTH_SAMPLE_PDF_BASE64 = [
  "JVBERi0xLjcKJYGBgYEKCjYgMCBvYmoKPDwKL0ZpbHRlciAvRmxhdGVEZWNvZGUKL0xlbmd0aCAxNDYKPj4Kc3RyZWFtCnicJYtB",
  "CgIxDEX3OUXWgpimmSQFEZxxBhduhF5AZBRFF4p4fttKNv/xXl7QZyCs977Caj8/vvPndj4tjZKLk3nCwJgvwIL5AKGlAYNjJMxP",
  "WItrp0EHE3UmjVo5as8kk/Rxy1SNJotlUSlNu9L9mduvFNayJ901I82JduZW3aDBUiHmcYP5DnkBY4Yj/AB/8CivCmVuZHN0cmVh",
  "bQplbmRvYmoKCjcgMCBvYmoKPDwKL0ZpbHRlciAvRmxhdGVEZWNvZGUKL1R5cGUgL09ialN0bQovTiA1Ci9GaXJzdCAyNgovTGVu",
  "Z3RoIDMzNgo+PgpzdHJlYW0KeJydUk1rwzAMvftX6LgdhpU0ddJRAv3KBqOstIONjR3cxJSMYo/EGd2/n+S0HT3sMhtj6enpYUuK",
  "ACGGJIEBpBnQFScwhAQVjMdCPn1/GpArvTOtkA911cIbRRHW8C7kzHXWQyTyXPxyZ9rrvduJPgkiJp8Yq8ZVXWkaGBeLokBUfAaI",
  "aYwYz+kmWw17P1Vkj/o4YwShynpbRXRmxEl6jGMhl3HWwT6uhrmQS1fNtTdwNb+NMVYY0Q7r9Zq+0Bjt3T8elB9za2f/VL+oS+Gs",
  "F3LTbX1wGYyEnOrWcATkvdl/GV+XWsiFLV1V2x3I59pObFufgEtFLjCXuTHchVBnuTat65qSCs+8oMzGWfwmxVGWZJhmI+r1sTXy",
  "5XH7YcpAZXdx8Hcbz7/qAcaWpqr11B2o/0h7oBDSmIdgYq3zPBZhIKynx7CnjkNCuT+eTpslCmVuZHN0cmVhbQplbmRvYmoKCjgg",
  "MCBvYmoKPDwKL1NpemUgOQovUm9vdCAyIDAgUgovSW5mbyAzIDAgUgovRmlsdGVyIC9GbGF0ZURlY29kZQovVHlwZSAvWFJlZgov",
  "TGVuZ3RoIDQxCi9XIFsgMSAyIDIgXQovSW5kZXggWyAwIDkgXQo+PgpzdHJlYW0KeJwVxLERACAMA7G3wx0t+3fMxxAJViGg22xI",
  "Sk6Vljgg3s8XBmLdA9cKZW5kc3RyZWFtCmVuZG9iagoKc3RhcnR4cmVmCjY3MwolJUVPRg==",
].join("");
