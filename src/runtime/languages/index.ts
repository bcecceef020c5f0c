// Source-language tooling the policy's static checks and the adapters both read: parsers and scanners, no policy.
export { parseJavaScript, type JavaScriptNode } from './javascript'
export { parseTypeScript, stripTypeScript, transpileTypeScript, type StrippedTypeScript } from './typescript'
export { scanPython, type PythonScan, type PythonLocation } from './python-scan'
