import { render } from 'preact'
import { App } from './app'
import { html } from './html'

render(html`<${App} />`, document.getElementById('app')!)
