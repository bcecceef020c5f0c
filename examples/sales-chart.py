# Last month's sales by region, and the daily trend as a chart: the data work agents are asked for most.
# execgate run examples/sales-chart.py --profile data --file examples/data/sales.csv
import pandas as pd
import matplotlib.pyplot as plt

sales = pd.read_csv('sales.csv', parse_dates=['date'])
sales['revenue'] = sales.units * sales.unit_price
last_month = sales[sales.date.dt.to_period('M') == sales.date.max().to_period('M')]
by_region = last_month.groupby('region').revenue.sum().sort_values(ascending=False)

daily = sales.pivot_table(index='date', columns='region', values='revenue', aggfunc='sum')
ax = daily.rolling(7).mean().plot(figsize=(7, 4), title='Revenue by region (7-day average)')
ax.set_ylabel('revenue')
plt.tight_layout()

print(f"{last_month.date.min():%B %Y}: total {last_month.revenue.sum():,.2f}; best region {by_region.index[0]}")
by_region.round(2).to_dict()
